"""The one rule for "this program is a Python interpreter, by its file name": the probe's
supervisor starts only such an ``sys.executable`` (an embedding host's may be the host),
and ``doctor`` reads ``python -m launcher_probe`` as the console script."""

from __future__ import annotations

__all__ = ["is_python"]


def is_python(name: str) -> bool:
    """Whether ``name`` is ``python`` followed by ASCII digits and dots only (``python``,
    ``python3``, ``python3.11``; not ``pythonw``, ``python3.11-dbg`` or ``Python3``).

    String methods, no regex: the probe's path compiles none."""
    return name.startswith("python") and not name[6:].strip("0123456789.")
