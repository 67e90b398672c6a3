"""launcher-probe: find, verify, cache and publish the Codex sandbox launcher."""

__version__ = "0.1.0"
