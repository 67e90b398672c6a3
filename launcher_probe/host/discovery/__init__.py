"""The discovery stage: every place the Codex CLI could be, in order (``order.py``): the
operator's word (``config_file.py`` reads the config file), the harness process that
started us (``harness.py``), the usual install places (``places.py``)."""

from launcher_probe.host.discovery.order import discover as discover

__all__ = ["discover"]
