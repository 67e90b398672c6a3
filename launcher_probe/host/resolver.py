"""The resolver: discovery → the walk, judged by the path rules → cached verdict or probe
→ the walk replayed → Decision. For the operator's path, the memory front answers first,
then its record on disk (``VerdictCache.published``); discovery is imported only after.

Thread-safe: its only shared state is the cache (the memory front, records on disk
replaced atomically, one file lock per entry).
"""

from __future__ import annotations

import os

from launcher_probe.contract import ENV_VAR, Reason, Source
from launcher_probe.host.cache.memory import MEMORY
from launcher_probe.host.cache.policy import CacheUnavailable, VerdictCache
from launcher_probe.host.cache.policy import ResolverConfig as ResolverConfig  # documented here
from launcher_probe.host.decision import Decision, PassedOver, Published, Withheld
from launcher_probe.host.probe_result import DEFAULT_TIMEOUT
from launcher_probe.host.versions import untested_version_warning
from launcher_probe.json_output import printable

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from launcher_probe.host.discovery.order import Discovery
    from launcher_probe.host.probe.supervisor_client import Supervisor

__all__ = ["SEARCHED", "ResolverConfig", "resolve_launcher"]

#: Places named in the ``not_found`` detail; the Withheld's ``searched`` holds them all.
SEARCHED = 24


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


def operator_path(codex: str | None) -> tuple[str, str] | None:
    """``(source, path)`` when the caller or ``LAUNCHER_PROBE_CODEX`` names the only
    candidate (no file needs reading to know it), else None."""
    if codex is not None:
        return _EXPLICIT, codex
    from_env = os.environ.get(ENV_VAR)
    return (_ENV, from_env) if from_env else None


def operator_choice(codex: str | None) -> tuple[str, str] | None:
    """``(source, path)`` of the operator's path: ``codex``, else ``$LAUNCHER_PROBE_CODEX``
    (both without reading a file), else the config file's ``codex``
    (``discovery.order.operator_choice``: platformdirs and tomllib only then); None when
    there is none. ConfigError when the config file cannot be used."""
    named = operator_path(codex)
    if named is not None:
        return named
    from launcher_probe.host.discovery.order import operator_choice as configured

    found = configured(None)
    return None if found is None else (str(found[0]), found[1])


def decided_without_discovery(
    operator: tuple[str, str] | None, *, config: ResolverConfig | None = None
) -> Decision | None:
    """The decision the fronts give without discovery, or None: then resolve. For the
    operator's ``(source, path)``: the memory front, then its record on disk
    (``VerdictCache.published``); for none: the discovery memo (``discovery_memo.replay``:
    what decided the last full discovery, replayed), then the record of the path it names,
    or ``not_found`` again when it found nothing."""
    config = config or _DEFAULT_CONFIG
    if operator is not None:
        remembered = MEMORY.published(*operator, config.clock, config.lifetimes)
        if remembered is not None:
            return _with_version_warning(remembered)
    warnings: list[str] = []
    cache = _open_cache(config, warnings)
    if cache is None:
        return None
    stored: Decision | None
    if operator is not None:
        stored = cache.published(*operator)
    else:
        from launcher_probe.host.cache.discovery_memo import replay

        stored = replay(cache)
    return None if stored is None else _answer(stored, warnings)


def _answer(decision: Decision, warnings: list[str]) -> Decision:
    """``decision`` with ``warnings`` and, when published, its version's warning if any."""
    if isinstance(decision, Withheld):
        return decision.replace(warnings=tuple(warnings))
    return _with_version_warning(decision.replace(warnings=tuple(warnings)))


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
    # The operator's path, or the discovery memo without one: a passed verdict (or, with
    # no operator path, a not_found that nothing changed since) answers before discovery.
    operator = operator_path(codex) if use_cache and not refresh else None
    if use_cache and not refresh:
        known = decided_without_discovery(operator, config=config)
        if known is not None:
            return known
    warnings: list[str] = []
    cache = _open_cache(config, warnings) if use_cache else None
    claim = supervisor = None
    try:
        if operator is None and cache is not None and not refresh:
            # The memo missed: wait for a process of this environment already discovering,
            # then replay the memo it writes; or discover, its waiters going once it is
            # written.
            from launcher_probe.host.cache.discovery_memo import wait_turn

            memo_turn = wait_turn(cache)
            if isinstance(memo_turn, (Published, Withheld)):
                return _answer(memo_turn, warnings)
            claim = memo_turn
        if operator is not None and cache is not None:
            stored = cache.published(*operator)
            turn = stored if stored is not None else cache.wait_turn(*operator)
            if isinstance(turn, Published):
                return _answer(turn, warnings)
            claim = turn  # this process resolves: its waiters go once the verdict is stored
            # A supervisor launched early for the probe it will run; none when the record
            # answers with a failed verdict (the probe makes one should it run after all).
            if claim is not None and not cache.holds_verdict(operator[1]):
                # (With the probe stage's package, the steps too: the probe needs them next.)
                from launcher_probe.host.probe.supervisor_client import Supervisor

                supervisor = Supervisor()
        if supervisor is not None:
            # Its interpreter starts on another core while the slow path imports (filelock,
            # discovery); it runs nothing before the probe, under the entry lock, asks.
            supervisor.launch()
        decision = _discover_and_decide(
            codex, cache, refresh, timeout, config, warnings, supervisor
        )
    finally:  # whatever raised, and wherever (the claim is a file descriptor)
        if supervisor is not None:
            supervisor.close()  # ended by the probe already, or it never ran anything
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
    supervisor: Supervisor | None = None,
) -> Decision:
    """The slow path: discovery, then each candidate's attempt in order (the first probe
    below ``supervisor``, when one was launched for it)."""
    from launcher_probe.host.discovery.order import discover

    seen = None  # what a discovery memo records, read before discovery reads it
    if codex is None and cache is not None and not refresh:
        from launcher_probe.host.cache.discovery_memo import observed

        seen = observed()
    found = discover(codex)
    tried: list[PassedOver] = []
    if found.candidates:  # (filelock, which the attempt's lock imports, costs tens of ms)
        from launcher_probe.host.attempt import Attempt
    for candidate in found.candidates:
        attempt = Attempt(
            candidate,
            cache,
            refresh=refresh,
            timeout=timeout,
            config=config,
            warnings=warnings,
            supervisor=supervisor,
        )
        supervisor = None
        outcome = attempt.decide()
        if isinstance(outcome, Published):
            published = outcome.replace(warnings=tuple(warnings), tried=tuple(tried))
            if seen is not None and not tried and found.candidates[0].source is not Source.ENV:
                from launcher_probe.host.cache.discovery_memo import record

                assert cache is not None
                record(cache, found, seen)
            return _with_version_warning(published)
        tried.append(outcome)
    withheld = _withheld(found, tried, warnings)
    if seen is not None and not found.candidates:
        from launcher_probe.host.cache.discovery_memo import record

        assert cache is not None
        record(cache, found, seen, nothing=withheld)
    return withheld


def _with_version_warning(decision: Published) -> Published:
    """``decision``, warning when its version is outside the tested range."""
    warning = untested_version_warning(decision.version)
    if warning is None:
        return decision
    return decision.replace(warnings=(*decision.warnings, warning))
