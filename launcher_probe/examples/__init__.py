"""Runnable examples shipped with the package (``python -m launcher_probe.examples.NAME``)."""
