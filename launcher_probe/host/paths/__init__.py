"""The paths stage: the walk (``walk.py``), the path rules judged on it (``rules.py``) and
the fingerprint, which is the recorded walk (``fingerprint.py``)."""

from launcher_probe.host.paths.rules import check_launcher_path as check_launcher_path

__all__ = ["check_launcher_path"]
