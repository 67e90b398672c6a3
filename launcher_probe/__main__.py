"""``python -m launcher_probe``."""

from launcher_probe.cli import console

raise SystemExit(console())
