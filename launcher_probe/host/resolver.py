"""The resolver: discovery → the walk, judged by the path rules → cached verdict or probe
→ the walk replayed → Decision. For the operator's path, a memory hit answers first.

Thread-safe: its only shared state is the cache (the memory front, records on disk
replaced atomically, one file lock per entry).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from launcher_probe.contract import LauncherDescriptor, Reason
from launcher_probe.host.cache import (
    DEFAULT_LOCK_TIMEOUT,
    CacheUnavailable,
    Lifetimes,
    LockTimeout,
    VerdictCache,
)
from launcher_probe.host.decision import Decision, PassedOver, Published, Withheld
from launcher_probe.host.discovery import ENV_VAR, Candidate, Discovery, Source, discover
from launcher_probe.host.fingerprint import Fingerprint
from launcher_probe.host.memory import MEMORY
from launcher_probe.host.paths import PathVerdict, printable
from launcher_probe.host.probe_result import DEFAULT_TIMEOUT, ProbeResult

#: Places named in the ``not_found`` detail; the Withheld's ``searched`` holds them all.
SEARCHED = 24


@dataclass(frozen=True, slots=True)
class ResolverConfig:
    """Where the cache lives and how long verdicts and lock waits last."""

    #: None: ``$LAUNCHER_PROBE_CACHE_DIR`` or platformdirs' user cache dir.
    cache_dir: Path | None = None
    lifetimes: Lifetimes = field(default_factory=Lifetimes)
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT
    #: Wall clock used for probed-at and expiry (tests pass their own).
    clock: Callable[[], float] = time.time


@dataclass(frozen=True, slots=True)
class _Verdict:
    fingerprint: Fingerprint
    result: ProbeResult
    probed_at: float
    expires_at: float
    from_cache: bool


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


class _Attempt:
    """Deciding one candidate: a Published, or a PassedOver saying why not."""

    def __init__(
        self,
        candidate: Candidate,
        cache: VerdictCache | None,
        *,
        refresh: bool,
        timeout: float,
        config: ResolverConfig,
        warnings: list[str],
    ) -> None:
        self.candidate = candidate
        self.cache = cache
        self.refresh = refresh
        self.timeout = timeout
        self.lifetimes = config.lifetimes
        self.clock = config.clock
        self.warnings = warnings
        self.started = self.clock()

    def passed_over(self, reason: Reason, detail: str) -> PassedOver:
        candidate = self.candidate
        return PassedOver(str(candidate.source), candidate.path, candidate.resolved, reason, detail)

    def decide(self) -> Published | PassedOver:
        verdict = self.candidate.verdict
        if not verdict.ok:
            return self.passed_over(verdict.reason or Reason.NOT_FOUND, verdict.detail)
        native = self.candidate.resolved
        if native is None:
            return self.passed_over(Reason.SHIM_UNRESOLVED, f"{self.candidate.path} is a shim")
        # One change of the binary while it is verified is retried; a second one withholds it.
        for _ in range(2):
            try:
                decided = self.verdict(native)
            except OSError as error:
                return self.passed_over(
                    Reason.NOT_FOUND, f"{self.candidate.path} vanished: {error.strerror}"
                )
            except LockTimeout as error:
                return self.passed_over(Reason.LOCK_TIMEOUT, str(error))
            if isinstance(decided, PathVerdict):  # the path rules fail on the files now
                return self.passed_over(decided.reason or Reason.NOT_FOUND, decided.detail)
            if decided is None:
                continue  # changed during the probe: the result was discarded
            result = decided.result
            if not result.ok:
                return self.passed_over(result.reason or Reason.PROBE_FAILED, self.why(decided))
            # The last look before publishing: every inode the path rules judged, unchanged.
            if decided.fingerprint.still_matches():
                return Published(
                    descriptor=LauncherDescriptor(decided.fingerprint.native),
                    source=str(self.candidate.source),
                    version=result.version or "",
                    fingerprint=decided.fingerprint,
                    from_cache=decided.from_cache,
                    probed_at=decided.probed_at,
                )
        return self.passed_over(
            Reason.BINARY_CHANGED,
            f"{native} changed twice while it was being verified; not published",
        )

    def why(self, verdict: _Verdict) -> str:
        if not verdict.from_cache:
            return verdict.result.detail
        left = max(0.0, verdict.expires_at - self.clock())
        return (
            f"{verdict.result.detail} (cached verdict; probed again in {left:.0f} s "
            "or as soon as the binary changes)"
        )

    def judged(self, native: str) -> Fingerprint | PathVerdict:
        """Walk the candidate and its native binary now; the failing path-rule verdict
        when the files fail the rules. OSError when they are gone."""
        fingerprint = Fingerprint.of(self.candidate.path, native)
        verdict = fingerprint.verdict()
        return fingerprint if verdict.ok else verdict

    def verdict(self, native: str) -> _Verdict | PathVerdict | None:
        """The cached or fresh verdict for the files as they are now (the path rules
        judged on the same walk first); None if they changed while probed. OSError when
        they are gone; LockTimeout."""
        fingerprint = self.judged(native)
        if isinstance(fingerprint, PathVerdict):
            return fingerprint
        cache = self.cache
        if cache is None:
            return self.probe(fingerprint)
        if not self.refresh:
            hit = cache.lookup(fingerprint, warnings=self.warnings)
            if hit is not None:
                return _Verdict(fingerprint, hit.result, hit.probed_at, hit.expires_at, True)
        try:
            with cache.locked(self.candidate.path):
                return self.locked_verdict(cache, fingerprint, native)
        except CacheUnavailable as error:  # the lock file cannot be made: probe uncached
            self.warnings.append(str(error))
            return self.probe(fingerprint)

    def locked_verdict(
        self, cache: VerdictCache, fingerprint: Fingerprint, native: str
    ) -> _Verdict | PathVerdict | None:
        """:meth:`verdict` under the entry lock: read the record again, else probe and store."""
        # Another process may have probed while we waited, or the files changed meanwhile.
        if not fingerprint.still_matches():
            judged = self.judged(native)
            if isinstance(judged, PathVerdict):
                return judged
            fingerprint = judged
        hit = cache.lookup(
            fingerprint,
            warnings=self.warnings,
            use_memory=False,
            probed_since=self.started if self.refresh else None,
        )
        if hit is not None:
            return _Verdict(fingerprint, hit.result, hit.probed_at, hit.expires_at, True)
        verdict = self.probe(fingerprint)
        if verdict is not None:
            try:
                cache.store(fingerprint, verdict.result, verdict.probed_at)
            except (OSError, CacheUnavailable) as error:
                self.warnings.append(f"verdict not cached: {error}")
        return verdict

    def probe(self, fingerprint: Fingerprint) -> _Verdict | None:
        from launcher_probe.host.probe import probe_launcher  # a miss only: spawns processes

        probed_at = self.clock()
        result = probe_launcher(fingerprint.native, timeout=self.timeout)
        if not fingerprint.still_matches():
            return None
        expires_at = probed_at + self.lifetimes.of(result)
        return _Verdict(fingerprint, result, probed_at, expires_at, False)


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
    if use_cache and not refresh:
        operator = _operator_path(codex)
        if operator is not None:  # the memory front answers for the operator's path alone
            remembered = MEMORY.published(*operator, config.clock, config.lifetimes)
            if remembered is not None:
                return remembered
    warnings: list[str] = []
    cache = _open_cache(config, warnings) if use_cache else None
    found = discover(codex)
    tried: list[PassedOver] = []
    for candidate in found.candidates:
        attempt = _Attempt(
            candidate,
            cache,
            refresh=refresh,
            timeout=timeout,
            config=config,
            warnings=warnings,
        )
        outcome = attempt.decide()
        if isinstance(outcome, Published):
            return replace(outcome, warnings=tuple(warnings), tried=tuple(tried))
        tried.append(outcome)
    return _withheld(found, tried, warnings)
