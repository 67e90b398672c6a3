"""Pools of daemon threads for the slow work (resolutions, probes, re-verifications), so
that the event loop never waits, and a stopping helper is not held up by a probe.

A pool starts threads as jobs wait, up to its size, and keeps them: the helper has one
pool for requests and one for the watcher, so neither can starve the other.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

log = logging.getLogger("launcher_probe.service")


class Workers:
    """Up to ``size`` daemon threads (named ``<name>-N``) running submitted jobs in order;
    counts the busy ones."""

    def __init__(self, size: int, name: str = "worker") -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        #: Notified whenever the last busy job finishes.
        self._all_done = threading.Condition(self._lock)
        self._size = size
        self._name = name
        self._busy = 0  # submitted, not finished
        self._waiting = 0  # submitted, not yet taken by a thread
        self._idle = 0  # threads waiting for a job
        self._threads = 0

    def submit(self, job: Callable[[], None]) -> None:
        """Run ``job`` in a worker (it must not raise; an exception is logged)."""
        with self._lock:
            self._busy += 1
            self._waiting += 1
            start = self._waiting > self._idle and self._threads < self._size
            if start:
                self._threads += 1
                number = self._threads
        self._jobs.put(job)
        if start:
            threading.Thread(target=self._work, name=f"{self._name}-{number}", daemon=True).start()

    @property
    def busy(self) -> int:
        """Jobs submitted and not yet finished."""
        return self._busy

    def wait_idle(self, timeout: float) -> bool:
        """Whether every job submitted finishes within ``timeout`` seconds."""
        with self._lock:
            return self._all_done.wait_for(lambda: self._busy == 0, timeout)

    @property
    def threads(self) -> int:
        """Threads started so far (at most the pool's size)."""
        return self._threads

    def _work(self) -> None:
        while True:
            with self._lock:
                self._idle += 1
            job = self._jobs.get()
            with self._lock:
                self._idle -= 1
                self._waiting -= 1
            try:
                job()
            except Exception:
                log.exception("a background job failed")
            finally:
                with self._lock:
                    self._busy -= 1
                    if self._busy == 0:
                        self._all_done.notify_all()
