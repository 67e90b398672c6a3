"""The helper's log lines, written to stderr by a thread of their own: a thread that logs
(a worker deciding, the watcher) only queues its line, so a stderr nobody reads (a
terminal paused with Ctrl-S, a pipe never drained) stops the log, never the helper."""

from __future__ import annotations

import logging
import queue
import threading
from logging.handlers import QueueHandler

#: Lines waiting for stderr at most; beyond, new ones are dropped (and counted).
MAX_QUEUED = 1024


class _Dropping(QueueHandler):
    """Queues each record without waiting: when ``MAX_QUEUED`` wait already, it is
    dropped, and the next line written says how many were."""

    def __init__(self, lines: queue.Queue[logging.LogRecord | None]) -> None:
        super().__init__(lines)
        self.lines = lines
        self.dropped = 0

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        return record  # formatted by the writer's handler, traceback and all, as it was

    def enqueue(self, record: logging.LogRecord) -> None:
        try:
            self.lines.put_nowait(record)
        except queue.Full:
            self.dropped += 1  # a miscount under a race costs one line of the tally


class LogWriter:
    """``handler`` (what ``logging`` is given) queues; one daemon thread writes to
    ``target``. ``close`` lets the thread write what is queued, waiting at most a while."""

    def __init__(self, target: logging.Handler) -> None:
        self._lines: queue.Queue[logging.LogRecord | None] = queue.Queue(MAX_QUEUED)
        self.handler = _Dropping(self._lines)
        self._target = target
        self._thread = threading.Thread(target=self._write, name="log-writer", daemon=True)
        self._thread.start()

    def _write(self) -> None:
        while (record := self._lines.get()) is not None:
            dropped, self.handler.dropped = self.handler.dropped, 0
            if dropped:
                record.msg = f"{record.msg} ({dropped} lines dropped before: stderr was not read)"
            self._target.handle(record)

    def close(self, timeout: float) -> None:
        """Write what is queued (unless stderr blocks for ``timeout`` seconds), then stop."""
        try:
            self._lines.put(None, timeout=timeout)
        except queue.Full:
            return
        self._thread.join(timeout)
