"""The resolver: discovery → path rules → fingerprint → cached verdict or probe → Decision.

Thread-safe: its only shared state is the cache (memory front under a lock, records on
disk replaced atomically, one file lock per entry).
"""

from __future__ import annotations

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
    memory_front,
)
from launcher_probe.host.decision import Decision, PassedOver, Published, Withheld
from launcher_probe.host.discovery import Candidate, Discovery, discover
from launcher_probe.host.fingerprint import Fingerprint
from launcher_probe.host.probe_result import DEFAULT_TIMEOUT, ProbeResult

#: Said when discovery found nothing at all.
SEARCHED = (
    "the calling Codex process, the standalone install (CODEX_INSTALL_DIR, CODEX_HOME), "
    "every absolute PATH entry, and the usual install places (npm/pnpm/bun prefixes, "
    "Homebrew, editor extensions, app bundles)"
)


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
            memory=memory_front(),
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
            if decided is None:
                continue  # changed during the probe: the result was discarded
            result = decided.result
            if not result.ok:
                return self.passed_over(result.reason or Reason.PROBE_FAILED, self.why(decided))
            if decided.fingerprint.still_matches():  # the last look before publishing
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

    def verdict(self, native: str) -> _Verdict | None:
        """The cached or fresh verdict for the file as it is now; None if it changed
        while it was probed. OSError when it is gone; LockTimeout."""
        path = self.candidate.path
        cache = self.cache
        if cache is None:
            return self.probe(Fingerprint.of(path, native))
        if not self.refresh:
            hit = cache.lookup(Fingerprint.of(path, native), warnings=self.warnings)
            if hit is not None:
                return _Verdict(hit.fingerprint, hit.result, hit.probed_at, hit.expires_at, True)
        try:
            with cache.locked(path):
                return self.locked_verdict(cache, native)
        except CacheUnavailable as error:  # the lock file cannot be made: probe uncached
            self.warnings.append(str(error))
            return self.probe(Fingerprint.of(path, native))

    def locked_verdict(self, cache: VerdictCache, native: str) -> _Verdict | None:
        """:meth:`verdict` under the entry lock: read the record again, else probe and store."""
        # Another process may have probed while we waited, or the file changed meanwhile.
        fingerprint = Fingerprint.of(self.candidate.path, native)
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
            except OSError as error:
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
        skipped = f"; skipped PATH entries: {len(found.skipped)}" if found.skipped else ""
        return Withheld(
            Reason.NOT_FOUND,
            f"no Codex CLI found; searched {SEARCHED}{skipped}",
            (),
            tuple(warnings),
        )
    first = tried[0]
    # Path-rule details name the path already; probe details do not.
    detail = first.detail if first.path in first.detail else f"{first.path}: {first.detail}"
    if len(tried) > 1:
        detail += f" (and {len(tried) - 1} more candidate(s) passed over)"
    return Withheld(first.reason, detail, tuple(tried), tuple(warnings))


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
    config = config or ResolverConfig()
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
            return replace(outcome, warnings=tuple(warnings))
        tried.append(outcome)
    return _withheld(found, tried, warnings)
