"""Where a launcher candidate comes from; kept apart from discovery so that resolving the
operator's path from the cache imports none of it."""

from __future__ import annotations

import enum
import os

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


def operator_choice(codex: str | None) -> tuple[Source, str] | None:
    """``(source, path)`` of the operator's path: ``codex`` (``--codex``), else
    ``$LAUNCHER_PROBE_CODEX``, else the config file's ``codex``; None when there is none.
    ConfigError when the config file cannot be used."""
    if codex is not None:
        return Source.EXPLICIT, codex
    from_env = os.environ.get(ENV_VAR)
    if from_env:
        return Source.ENV, from_env
    from launcher_probe.host.config import configured_codex  # platformdirs, tomllib: only now

    configured = configured_codex()
    if configured is not None:
        return Source.CONFIG, configured
    return None
