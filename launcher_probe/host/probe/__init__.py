"""The probe stage: the steps (``steps.py``) and how ``sandbox`` failed
(``sandbox_failure.py``), each run bounded (``bounded_run.py``) below the supervisor
(``supervisor_client.py`` starts ``supervisor_process.py``), or, without it, with the
tree killed by what can be found (``tree_kill.py``)."""

from launcher_probe.host.probe.steps import probe_launcher as probe_launcher

__all__ = ["probe_launcher"]
