"""The operator's settings in force: ``--codex``, ``LAUNCHER_PROBE_CODEX`` and the config
file (its path shown even when it is absent, and what it says)."""

from __future__ import annotations

import os
from typing import Any

from launcher_probe.json_output import printable


def collect(codex: str | None) -> dict[str, Any]:
    """``{"source", "path", "flag", "env": {"name", "value"}, "config": {"path", "exists",
    "codex"}, "cache": {"directory", "filesystem", "warning"}}``: ``source``/``path`` name
    the setting that decides (the first of flag, env and config that is set; both null
    when discovery searches). ConfigError (exit 4) for a config file that cannot be used,
    as every command raises it."""
    from launcher_probe.contract import ENV_VAR, Source
    from launcher_probe.host.discovery.config_file import config_file, configured_codex

    file = config_file()
    configured = configured_codex(file)
    from_env = os.environ.get(ENV_VAR) or None
    chosen = next(
        (
            (str(source), value)
            for source, value in (
                (Source.EXPLICIT, codex),
                (Source.ENV, from_env),
                (Source.CONFIG, configured),
            )
            if value is not None
        ),
        (None, None),
    )
    return {
        "source": chosen[0],
        "path": None if chosen[1] is None else printable(chosen[1]),
        "flag": None if codex is None else printable(codex),
        "env": {"name": ENV_VAR, "value": None if from_env is None else printable(from_env)},
        "config": {
            "path": printable(str(file)),
            "exists": os.path.lexists(file),
            "codex": None if configured is None else printable(configured),
        },
        "cache": _cache(),
    }


def _cache() -> dict[str, Any]:
    """``{"directory", "filesystem", "warning"}``: the cache root, the type of the file
    system it is on (null when unknown) and a warning when that is a network one."""
    from launcher_probe.doctor.filesystem import filesystem_type, network_warning
    from launcher_probe.host.cache.location import CacheUnavailable, cache_root

    try:
        root = cache_root()
    except CacheUnavailable:  # the launcher part says why
        return {"directory": None, "filesystem": None, "warning": None}
    kind = filesystem_type(root)
    return {
        "directory": printable(root),
        "filesystem": kind,
        "warning": network_warning(printable(root), kind),
    }
