"""Where a launcher candidate comes from; kept apart from discovery so that resolving the
operator's path from the cache imports none of it."""

from __future__ import annotations

import enum

#: Environment variable naming the operator's Codex executable.
ENV_VAR = "LAUNCHER_PROBE_CODEX"


class Source(enum.StrEnum):
    """Where a candidate came from; the first three are the operator's word."""

    EXPLICIT = "explicit"
    ENV = "env"
    CONFIG = "config"
    HARNESS = "harness"
    STANDALONE = "standalone"
    PATH = "path"
    KNOWN = "known"
