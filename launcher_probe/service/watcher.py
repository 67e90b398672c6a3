"""Keeps verdicts warm: notices a changed binary or judged directory, or a verdict about to
expire, without any request, and verifies it again in the background."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from launcher_probe.service.decisions import DecisionTable, Key
from launcher_probe.service.log_budget import shown

log = logging.getLogger("launcher_probe.service")
#: How often the held decisions' fingerprints are checked, in seconds.
INTERVAL = 0.25


class Watcher:
    """A daemon thread checking every held decision's fingerprint every ``interval`` seconds;
    ``submit`` runs a re-verification in a worker."""

    def __init__(
        self,
        table: DecisionTable,
        submit: Callable[[Callable[[], None]], None],
        interval: float = INTERVAL,
    ) -> None:
        self.table = table
        self.submit = submit
        self.interval = interval
        self._stopped = threading.Event()
        self._pending: set[Key] = set()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="watcher", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()

    def _run(self) -> None:
        while not self._stopped.wait(self.interval):
            try:
                due = self.table.due()
            except Exception:
                log.exception("watcher: checking the held decisions failed")
                continue
            for key, why, refresh in due:
                self.reverify(key, why, refresh=refresh)

    def reverify(self, key: Key, why: str, *, refresh: bool = False) -> None:
        """Verify ``key`` again in a worker (once at a time), logging why."""
        with self._lock:
            if key in self._pending:
                return
            self._pending.add(key)
        log.info("re-verifying %s: %s", "discovery" if key is None else shown(key), why)
        self.table.counters["reverifications"] += 1
        self.submit(lambda: self._reverify(key, refresh))

    def _reverify(self, key: Key, refresh: bool) -> None:
        try:
            self.table.resolve(key, refresh=refresh)
        except Exception as error:
            log.warning("re-verifying %s failed: %s", key and shown(key), error)
        finally:
            with self._lock:
                self._pending.discard(key)
