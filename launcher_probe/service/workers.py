"""A small pool of daemon threads for the slow work (resolutions, probes), so that the
event loop never waits, and a stopping helper is not held up by a probe."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

log = logging.getLogger("launcher_probe.service")


class Workers:
    """``size`` daemon threads running submitted jobs in order; counts the busy ones."""

    def __init__(self, size: int) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._busy = 0
        for number in range(size):
            threading.Thread(target=self._work, name=f"worker-{number}", daemon=True).start()

    def submit(self, job: Callable[[], None]) -> None:
        """Run ``job`` in a worker (it must not raise; an exception is logged)."""
        with self._lock:
            self._busy += 1
        self._jobs.put(job)

    @property
    def busy(self) -> int:
        """Jobs submitted and not yet finished."""
        return self._busy

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            try:
                job()
            except Exception:
                log.exception("a background job failed")
            finally:
                with self._lock:
                    self._busy -= 1
