"""``python -m launcher_probe``."""

from launcher_probe.cli import main

raise SystemExit(main())
