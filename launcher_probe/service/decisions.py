"""The helper's long-lived decisions: one per ``codex`` argument (``None``: discovery),
made by ``resolve_launcher``, served warm while their fingerprint still matches, made once
however many requests wait for them, and logged when they change.

A held decision's fingerprint is replayed (its ``lstat`` walk) at most once per
``REPLAY_INTERVAL`` by the requests: an answer is never older than that (the watcher
replays on its own schedule too).
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from launcher_probe.contract import Reason
from launcher_probe.host.decision import Decision, Published, Withheld
from launcher_probe.host.paths.fingerprint import Fingerprint
from launcher_probe.host.probe_result import DEFAULT_TIMEOUT
from launcher_probe.host.resolver import ResolverConfig, resolve_launcher
from launcher_probe.service.log_budget import LogBudget, shown
from launcher_probe.service.protocol import encode_result

log = logging.getLogger("launcher_probe.service")

#: The ``codex`` argument a decision answers (``None``: full discovery).
Key = str | None
#: A published verdict is verified again this long before it expires (at most).
REVERIFY_MARGIN = 300.0
#: The most decisions held; the one decided longest ago is dropped first.
MAX_HELD = 64
#: A warm answer rests on a replay of its fingerprint made at most this long ago (seconds).
REPLAY_INTERVAL = 0.001
#: Resolutions one request may run when the binary keeps changing right after each.
MAX_DECISIONS = 3
#: A ``codex`` longer than this (no usable path is: PATH_MAX) is decided, never kept.
MAX_KEY_CHARS = 4096
#: The most ``forget`` requests remembered for keys not held (the oldest go first).
MAX_FORGOTTEN = 256


@dataclass(frozen=True, slots=True)
class Held:
    """A decision as the helper keeps it."""

    decision: Decision
    #: ``decision.to_json()`` encoded, as the request that caused it sees it.
    fresh_answer: bytes
    #: The same for later requests (``from_cache`` true, as a warm CLI resolve says).
    warm_answer: bytes
    #: What a published decision rests on: the binary and every directory the path rules
    #: judged (``still_matches()`` is False as soon as any of them changes).
    fingerprint: Fingerprint | None
    decided_at: float
    expires_at: float | None
    #: The probe deadline the resolution that made it had (seconds).
    timeout: float = DEFAULT_TIMEOUT

    def answers(self, timeout: float | None) -> bool:
        """Whether it answers a request whose probe deadline is ``timeout`` (None: the
        default): anything but a ``probe_timeout`` reached under a shorter deadline than
        that, which answers only the requests that chose so short a one."""
        decision = self.decision
        wanted = DEFAULT_TIMEOUT if timeout is None else timeout
        timed_out = isinstance(decision, Withheld) and decision.reason is Reason.PROBE_TIMEOUT
        return not (timed_out and self.timeout < wanted)

    def summary(self) -> str:
        """One line naming the decision (what a change is logged as)."""
        decision = self.decision
        if isinstance(decision, Published):
            native = decision.descriptor.codex_executable
            return f"published {native} (codex-cli {decision.version})"
        return f"withheld: {decision.reason}: {decision.detail}"


class DecisionTable:
    """Decisions by key; thread-safe. ``resolve`` runs the resolver (slow: call it from a
    worker thread); ``warm`` only checks a fingerprint."""

    def __init__(self, config: ResolverConfig | None = None) -> None:
        self.config = config or ResolverConfig()
        self._lock = threading.Lock()
        self._held: dict[Key, Held] = {}
        self._running: dict[Key, Future[Held]] = {}
        self._forgotten: dict[Key, None] = {}  # ordered: the oldest is dropped first
        self._replayed_until: dict[Key, float] = {}  # monotonic: warm without a replay
        self._log_budget = LogBudget()
        self.counters = {"requests": 0, "resolutions": 0, "probes": 0, "reverifications": 0}

    def warm(self, key: Key) -> Held | None:
        """The held published decision for ``key`` if nothing it rests on changed and it
        is not due for re-verification; else None."""
        held = self._held.get(key)
        if held is None or held.fingerprint is None:
            return None
        if self._due(held):
            return None
        return held if self.replayed(key, held) else None

    def replayed(self, key: Key, held: Held) -> bool:
        """Whether what ``held`` rests on matched at most ``REPLAY_INTERVAL`` ago: replayed
        now unless the decision held for ``key`` is ``held`` and was replayed since. A
        withheld decision rests on nothing to replay."""
        if held.fingerprint is None:
            return True
        current = self._held.get(key) is held
        now = time.monotonic()
        if current and now < self._replayed_until.get(key, 0.0):
            return True
        if not held.fingerprint.still_matches():
            return False
        if current:
            self._replayed_until[key] = now + REPLAY_INTERVAL
        return True

    def running(self, key: Key) -> Future[Held] | None:
        """The resolution of ``key`` under way, if any (to wait on without a thread)."""
        return self._running.get(key)

    def resolve(self, key: Key, *, refresh: bool = False, timeout: float | None = None) -> Held:
        """Decide ``key`` now, unless a warm decision is held (one resolution however many
        callers ask at once, unless ``refresh``); LauncherProbeError passes through."""
        return self.resolve_answer(key, refresh=refresh, timeout=timeout)[0]

    def resolve_answer(
        self, key: Key, *, refresh: bool = False, timeout: float | None = None
    ) -> tuple[Held, bytes]:
        """:meth:`resolve`, and the answer for this caller: the decision as made for the
        caller whose resolution made it, as a warm hit (``from_cache``) for the others.
        Like a warm answer it rests on a replay at most ``REPLAY_INTERVAL`` old: a decision
        whose binary changed after it was made (while its resolution ended, or while this
        caller waited for it) is made again, at most ``MAX_DECISIONS`` times; then the
        launcher is withheld as changed."""
        for _ in range(MAX_DECISIONS):
            held, answer = self._resolved(key, refresh, timeout)
            if self.replayed(key, held):
                return held, answer
            refresh = False
        assert isinstance(held.decision, Published)
        path = held.decision.descriptor.codex_executable
        detail = f"{path} changed each time it was verified; not published"
        changed = Withheld(Reason.BINARY_CHANGED, detail)
        line = encode_result(changed.to_json())
        return Held(changed, line, line, None, self.config.clock(), None), line

    def _resolved(self, key: Key, refresh: bool, timeout: float | None) -> tuple[Held, bytes]:
        held = None if refresh else self.warm(key)
        if held is not None:
            return held, held.warm_answer
        while True:
            with self._lock:
                running = None if refresh else self._running.get(key)
                if running is None:
                    running = self._running[key] = Future()
                    refresh = refresh or key in self._forgotten
                    self._forgotten.pop(key, None)
                    break
            held = running.result()
            if held.answers(timeout):
                return held, held.warm_answer
            # Another request's shorter deadline passed: resolve with this one's.
        try:
            held = self._decide(key, refresh, DEFAULT_TIMEOUT if timeout is None else timeout)
        except BaseException as error:
            running.set_exception(error)
            raise
        finally:
            with self._lock:
                if self._running.get(key) is running:
                    del self._running[key]
        running.set_result(held)
        return held, held.fresh_answer

    def _decide(self, key: Key, refresh: bool, timeout: float) -> Held:
        decision = resolve_launcher(key, refresh=refresh, timeout=timeout, config=self.config)
        now = self.config.clock()
        fingerprint = expires = None
        warm = decision
        if isinstance(decision, Published):
            fingerprint = decision.fingerprint
            expires = decision.probed_at + self.config.lifetimes.passed
            warm = decision.replace(from_cache=True)
        fresh_answer = encode_result(decision.to_json())
        warm_answer = fresh_answer if warm is decision else encode_result(warm.to_json())
        held = Held(decision, fresh_answer, warm_answer, fingerprint, now, expires, timeout)
        with self._lock:
            self.counters["resolutions"] += 1
            if isinstance(decision, Published) and not decision.from_cache:
                self.counters["probes"] += 1
            previous = self._held.pop(key, None)
            self._replayed_until.pop(key, None)
            if key is None or len(key) <= MAX_KEY_CHARS:
                self._held[key] = held  # last in the order: decided most recently
            while len(self._held) > MAX_HELD:
                oldest = next(iter(self._held))
                del self._held[oldest]
                self._replayed_until.pop(oldest, None)
        if previous is None or previous.summary() != held.summary():
            suffix = self._log_budget.allow()
            if suffix is not None:
                log.info("decision for %s: %s%s", _name(key), shown(held.summary()), suffix)
        return held

    def forget(self, key: Key) -> bool:
        """Drop the decision for ``key``; its next resolution probes again. Whether one was held."""
        with self._lock:
            self._replayed_until.pop(key, None)
            if key is None or len(key) <= MAX_KEY_CHARS:
                self._forgotten.pop(key, None)
                self._forgotten[key] = None
                while len(self._forgotten) > MAX_FORGOTTEN:
                    del self._forgotten[next(iter(self._forgotten))]
            return self._held.pop(key, None) is not None

    def drop_all(self) -> list[Key]:
        """Drop every held decision (verdicts stay cached); the keys they were held for."""
        with self._lock:
            keys = list(self._held)
            self._held.clear()
            self._replayed_until.clear()
            return keys

    def due(self) -> list[tuple[Key, str, bool]]:
        """Held published decisions to verify again: ``(key, why, refresh)`` for each whose
        binary or judged directories changed (refresh false) or whose expiry is near
        (refresh true)."""
        with self._lock:
            held = [(key, item) for key, item in self._held.items() if key not in self._running]
        found = []
        for key, item in held:
            if item.fingerprint is None:
                continue
            if self._due(item):
                found.append((key, "the verdict expires soon", True))
            elif (why := item.fingerprint.first_change()) is not None:
                found.append((key, why, False))
        return found

    def _due(self, held: Held) -> bool:
        if held.expires_at is None:
            return False
        margin = min(REVERIFY_MARGIN, self.config.lifetimes.passed / 10)
        return self.config.clock() >= held.expires_at - margin

    def status(self) -> list[dict[str, Any]]:
        """Every held decision: its key, the decision, when it was made and when it expires."""
        with self._lock:
            held = list(self._held.items())
        return [
            {
                "codex": key,
                "decision": item.decision.to_json(),
                "decided_at": item.decided_at,
                "expires_at": item.expires_at,
            }
            for key, item in held
        ]


def _name(key: Key) -> str:
    return "discovery" if key is None else f"--codex {shown(key)}"
