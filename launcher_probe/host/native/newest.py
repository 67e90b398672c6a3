"""Globbed install places, newest version first and capped: shared by discovery's places
and the dispatchers and wrappers that pick the package they would run."""

from __future__ import annotations

import itertools
import re

#: Matches taken from one glob place (newest first among those listed).
MAX_GLOB_MATCHES = 64


def newest_matches(pattern: str) -> tuple[list[str], bool]:
    """At most ``MAX_GLOB_MATCHES`` paths matching ``pattern``, newest version first, and
    whether that is all of them."""
    import glob  # a glob place only: off the path of a native binary named outright

    listed = list(itertools.islice(glob.iglob(pattern), MAX_GLOB_MATCHES + 1))
    complete = len(listed) <= MAX_GLOB_MATCHES
    return sorted(listed[:MAX_GLOB_MATCHES], key=_natural_key, reverse=True), complete


def _natural_key(text: str) -> list[tuple[int, int | str]]:
    """Sort key that orders ``v10`` after ``v9`` (so newest versions come first reversed)."""
    # isdecimal, not isdigit: a superscript digit ("²") is a digit int() refuses.
    return [(1, int(part)) if part.isdecimal() else (0, part) for part in re.split(r"(\d+)", text)]
