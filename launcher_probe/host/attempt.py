"""Deciding one candidate of the resolver: the walk judged by the path rules, then the
cached verdict or a probe under the entry lock, then the walk replayed before publishing.

The slow path of ``resolve_launcher``: imported only once its fronts had no answer.
"""

from __future__ import annotations

from launcher_probe.contract import LauncherDescriptor, Reason
from launcher_probe.host.cache.entry_lock import LockTimeout
from launcher_probe.host.cache.policy import CacheUnavailable, VerdictCache
from launcher_probe.host.decision import PassedOver, Published
from launcher_probe.host.paths.fingerprint import Fingerprint
from launcher_probe.host.paths.rules import PathVerdict
from launcher_probe.host.probe_result import DEFAULT_TIMEOUT, ProbeResult
from launcher_probe.value import Value

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from launcher_probe.host.cache.policy import ResolverConfig
    from launcher_probe.host.discovery.candidate import Candidate
    from launcher_probe.host.probe.supervisor_client import Supervisor


class Verdict(Value):
    """A verdict for a fingerprint: cached (``from_cache``) or just probed."""

    __slots__ = ("fingerprint", "result", "probed_at", "expires_at", "from_cache")
    fingerprint: Fingerprint
    result: ProbeResult
    probed_at: float
    expires_at: float
    from_cache: bool

    def __init__(
        self,
        fingerprint: Fingerprint,
        result: ProbeResult,
        probed_at: float,
        expires_at: float,
        from_cache: bool,
    ) -> None:
        super().__init__(
            fingerprint=fingerprint,
            result=result,
            probed_at=probed_at,
            expires_at=expires_at,
            from_cache=from_cache,
        )


class Attempt:
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
        supervisor: Supervisor | None = None,
    ) -> None:
        self.candidate = candidate
        #: Launched early for the first probe (by the resolver, which holds the claim, or
        #: on a miss here); ended by that probe, else when the attempt is decided.
        self.supervisor = supervisor
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
        try:
            return self._decide()
        finally:
            if self.supervisor is not None:  # launched for a probe that did not run
                self.supervisor.close()

    def _decide(self) -> Published | PassedOver:
        # One change of the binary while it is verified is retried, from where the path
        # leads then (resolved again); a second one withholds it.
        for retry in (False, True):
            if retry:
                from launcher_probe.host.discovery.candidate import make_candidate

                self.candidate = make_candidate(self.candidate.source, self.candidate.path)
            verdict = self.candidate.verdict
            if not verdict.ok:
                return self.passed_over(verdict.reason or Reason.NOT_FOUND, verdict.detail)
            native = self.candidate.resolved
            if native is None:
                return self.passed_over(Reason.SHIM_UNRESOLVED, f"{self.candidate.path} is a shim")
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

    def why(self, verdict: Verdict) -> str:
        if not verdict.from_cache:
            return verdict.result.detail
        left = max(0.0, verdict.expires_at - self.clock())
        return (
            f"{verdict.result.detail} (cached verdict; probed again in {left:.0f} s "
            "or as soon as the binary changes)"
        )

    def judged(self, native: str) -> Fingerprint | PathVerdict | None:
        """Walk the candidate and its native binary now; the failing path-rule verdict
        when the files fail the rules; None when the path leads elsewhere now than to
        ``native`` (a symlink retargeted, a shim edited or its package lookup changed since
        it was resolved: no verdict here is about that file). OSError when they are gone."""
        fingerprint = Fingerprint.of(self.candidate.path, native)
        resolution = self.candidate.resolution
        if resolution is None or resolution.shim is None:
            if fingerprint.end != native:
                return None
        else:  # resolved again after the walk: a change after it is the walk's to show
            from launcher_probe.host.native.follow import resolve_native

            if resolve_native(self.candidate.path).native != native:
                return None
        verdict = fingerprint.verdict()
        return fingerprint if verdict.ok else verdict

    def verdict(self, native: str) -> Verdict | PathVerdict | None:
        """The cached or fresh verdict for the files as they are now (the path rules
        judged on the same walk first); None if they changed while probed (or the path
        leads elsewhere now). OSError when they are gone; LockTimeout."""
        fingerprint = self.judged(native)
        if fingerprint is None or isinstance(fingerprint, PathVerdict):
            return fingerprint
        cache = self.cache
        if cache is None:
            return self.probe(fingerprint)
        if not self.refresh:
            hit = cache.lookup(fingerprint, warnings=self.warnings)
            if hit is not None:
                return Verdict(fingerprint, hit.result, hit.probed_at, hit.expires_at, True)
        if self.supervisor is None:
            # For the probe a miss is likely to run: its supervisor starts on another core
            # while the entry lock is taken (filelock imports).
            from launcher_probe.host.probe.supervisor_client import Supervisor

            self.supervisor = Supervisor()
            self.supervisor.launch()
        try:
            with cache.locked(self.candidate.path):
                return self.locked_verdict(cache, fingerprint, native)
        except CacheUnavailable as error:  # the lock file cannot be made: probe uncached
            self.warnings.append(str(error))
            return self.probe(fingerprint)

    def locked_verdict(
        self, cache: VerdictCache, fingerprint: Fingerprint, native: str
    ) -> Verdict | PathVerdict | None:
        """:meth:`verdict` under the entry lock: read the record again, else probe and store."""
        # Another process may have probed while we waited, or the files changed meanwhile.
        if not fingerprint.still_matches():
            judged = self.judged(native)
            if judged is None or isinstance(judged, PathVerdict):
                return judged
            fingerprint = judged
        hit = cache.lookup(
            fingerprint,
            warnings=self.warnings,
            use_memory=False,
            probed_since=self.started if self.refresh else None,
        )
        if hit is not None:
            return Verdict(fingerprint, hit.result, hit.probed_at, hit.expires_at, True)
        verdict = self.probe(fingerprint)
        # A spawn that failed for this process's own shortage (out of fds, say), a step its
        # stopped tree took with it, or a deadline shorter than the default that passed,
        # says nothing about the binary: not stored for every other process to read.
        if verdict is not None and not _prober_shortage(verdict.result, self.timeout):
            try:
                cache.store(fingerprint, verdict.result, verdict.probed_at)
            except (OSError, CacheUnavailable) as error:
                self.warnings.append(f"verdict not cached: {error}")
        return verdict

    def probe(self, fingerprint: Fingerprint) -> Verdict | None:
        from launcher_probe.host.probe.steps import probe_below  # a miss only: spawns processes

        supervisor, self.supervisor = self.supervisor, None  # None: the probe makes one
        probed_at = self.clock()
        result = probe_below(supervisor, fingerprint.native, timeout=self.timeout)
        if not fingerprint.still_matches():
            return None
        expires_at = probed_at + self.lifetimes.of(result)
        return Verdict(fingerprint, result, probed_at, expires_at, False)


def _prober_shortage(result: ProbeResult, timeout: float) -> bool:
    """Whether ``result`` failed for the probing process's own resources (EMFILE, ENOMEM,
    EAGAIN at spawn or set-up), its tree being stopped from outside, or the ``timeout`` it
    chose below the default passing (``--timeout 0.01`` would withhold the launcher from
    every process for a transient failure's lifetime), not for anything about the binary."""
    if result.reason is Reason.PROBE_TIMEOUT:
        return timeout < DEFAULT_TIMEOUT
    return result.reason is Reason.SPAWN_FAILED and result.transient
