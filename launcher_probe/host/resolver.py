"""The resolver: discovery → the walk, judged by the path rules → cached verdict or probe
→ the walk replayed → Decision. For the operator's path, the memory front answers first,
then its record on disk (``VerdictCache.published``); discovery is imported only after.

Thread-safe: its only shared state is the cache (the memory front, records on disk
replaced atomically, one file lock per entry).
"""

from __future__ import annotations

import os
import time

from launcher_probe.contract import Reason
from launcher_probe.host.cache import (
    DEFAULT_LOCK_TIMEOUT,
    CacheUnavailable,
    Lifetimes,
    VerdictCache,
)
from launcher_probe.host.decision import Decision, PassedOver, Published, Withheld
from launcher_probe.host.memory import MEMORY
from launcher_probe.host.paths import printable
from launcher_probe.host.probe_result import DEFAULT_TIMEOUT
from launcher_probe.host.sources import ENV_VAR, Source
from launcher_probe.host.versions import untested_version_warning
from launcher_probe.value import Value

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable

    from launcher_probe.host.discovery import Discovery

#: Places named in the ``not_found`` detail; the Withheld's ``searched`` holds them all.
SEARCHED = 24


class ResolverConfig(Value):
    """Where the cache lives and how long verdicts and lock waits last."""

    __slots__ = ("cache_dir", "lifetimes", "lock_timeout", "clock")
    #: None: ``$LAUNCHER_PROBE_CACHE_DIR`` or platformdirs' user cache dir.
    cache_dir: str | os.PathLike[str] | None
    lifetimes: Lifetimes
    lock_timeout: float
    #: Wall clock used for probed-at and expiry (tests pass their own).
    clock: Callable[[], float]

    def __init__(
        self,
        cache_dir: str | os.PathLike[str] | None = None,
        lifetimes: Lifetimes | None = None,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(
            cache_dir=cache_dir,
            lifetimes=Lifetimes() if lifetimes is None else lifetimes,
            lock_timeout=lock_timeout,
            clock=clock,
        )


def _open_cache(config: ResolverConfig, warnings: list[str]) -> VerdictCache | None:
    try:
        return VerdictCache(
            config.cache_dir,
            lifetimes=config.lifetimes,
            lock_timeout=config.lock_timeout,
            clock=config.clock,
            memory=MEMORY,
        )
    except CacheUnavailable as error:
        warnings.append(str(error))
        return None


def _withheld(found: Discovery, tried: list[PassedOver], warnings: list[str]) -> Withheld:
    if not tried:
        detail = f"no Codex CLI found; {found.describe_searched(SEARCHED)}"
        return Withheld(Reason.NOT_FOUND, detail, (), tuple(warnings), found.searched)
    first = tried[0]
    # Path-rule details name the path (escaped) already; probe details do not.
    shown = printable(first.path)
    detail = first.detail if shown in first.detail else f"{shown}: {first.detail}"
    if len(tried) > 1:
        detail += f" (and {len(tried) - 1} more candidate(s) passed over)"
    return Withheld(first.reason, detail, tuple(tried), tuple(warnings), found.searched)


_DEFAULT_CONFIG = ResolverConfig()
_EXPLICIT, _ENV = str(Source.EXPLICIT), str(Source.ENV)


def _operator_path(codex: str | None) -> tuple[str, str] | None:
    """``(source, path)`` when the caller or ``LAUNCHER_PROBE_CODEX`` names the only
    candidate (no file needs reading to know it), else None."""
    if codex is not None:
        return _EXPLICIT, codex
    from_env = os.environ.get(ENV_VAR)
    return (_ENV, from_env) if from_env else None


def resolve_launcher(
    codex: str | None = None,
    *,
    refresh: bool = False,
    use_cache: bool = True,
    timeout: float = DEFAULT_TIMEOUT,
    config: ResolverConfig | None = None,
) -> Decision:
    """Publish the first candidate that passes the path rules and the (cached) probe.

    ``codex`` names the operator's path (the only candidate then). ``refresh`` ignores
    cached verdicts (but still stores the new one); ``use_cache=False`` neither reads
    nor writes the cache. ``timeout`` bounds each probe.

    Every decision about the launcher is returned: ``Published`` or ``Withheld`` (with the
    reason). Refused input raises, and only ``launcher_probe.errors`` classes: the
    operator's config file unusable (malformed, unsafe, too large or too deep) is
    ``ConfigError`` (an ``InputRejected``, exit 4), never a silent fallback to discovery.
    """
    config = config or _DEFAULT_CONFIG
    # For the operator's path alone, a passed verdict answers before discovery.
    operator = _operator_path(codex) if use_cache and not refresh else None
    if operator is not None:
        remembered = MEMORY.published(*operator, config.clock, config.lifetimes)
        if remembered is not None:
            return _with_version_warning(remembered)
    warnings: list[str] = []
    cache = _open_cache(config, warnings) if use_cache else None
    if codex is None and operator is None and use_cache and not refresh and cache is not None:
        from launcher_probe.host.memo import replay  # no operator path: the discovery memo

        replayed = replay(cache)
        if replayed is not None:
            return _with_version_warning(replayed.replace(warnings=tuple(warnings)))
    claim = None
    if operator is not None and cache is not None:
        stored = cache.published(*operator)
        turn = stored if stored is not None else cache.wait_turn(*operator)
        if isinstance(turn, Published):
            return _with_version_warning(turn.replace(warnings=tuple(warnings)))
        claim = turn  # this process probes: its waiters go once the verdict is stored
    try:
        decision = _discover_and_decide(codex, cache, refresh, timeout, config, warnings)
    finally:
        if claim is not None:
            claim.release()
    return decision


def _discover_and_decide(
    codex: str | None,
    cache: VerdictCache | None,
    refresh: bool,
    timeout: float,
    config: ResolverConfig,
    warnings: list[str],
) -> Decision:
    """The slow path: discovery, then each candidate's attempt in order."""
    from launcher_probe.host.attempt import Attempt
    from launcher_probe.host.discovery import discover

    found = discover(codex)
    memoise = codex is None and cache is not None and not refresh
    tried: list[PassedOver] = []
    for candidate in found.candidates:
        attempt = Attempt(
            candidate,
            cache,
            refresh=refresh,
            timeout=timeout,
            config=config,
            warnings=warnings,
        )
        outcome = attempt.decide()
        if isinstance(outcome, Published):
            published = outcome.replace(warnings=tuple(warnings), tried=tuple(tried))
            if memoise and not tried and found.candidates[0].source is not Source.ENV:
                from launcher_probe.host.memo import record

                assert cache is not None
                record(cache, found)
            return _with_version_warning(published)
        tried.append(outcome)
    return _withheld(found, tried, warnings)


def _with_version_warning(decision: Published) -> Published:
    """``decision``, warning when its version is outside the tested range."""
    warning = untested_version_warning(decision.version)
    if warning is None:
        return decision
    return decision.replace(warnings=(*decision.warnings, warning))
