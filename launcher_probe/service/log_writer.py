"""The helper's log lines, written to stderr by a thread of their own: a thread that logs
(a worker deciding, the watcher) only queues its line, so a stderr nobody reads (a
terminal paused with Ctrl-S, a pipe never drained) stops the log, never the helper, nor
its exit: the writer holds no lock of ``logging``'s while it writes (``logging.shutdown``
at exit takes every handler's), and it is a daemon thread that exit does not wait for."""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from logging.handlers import QueueHandler

from launcher_probe.fd_io import write_all

#: Lines waiting for stderr at most; beyond, new ones are dropped (and counted).
MAX_QUEUED = 1024


class _Dropping(QueueHandler):
    """Queues each record without waiting: when ``MAX_QUEUED`` wait already, it is
    dropped, and the next line queued says how many were."""

    def __init__(self, lines: queue.Queue[logging.LogRecord | None]) -> None:
        super().__init__(lines)
        self.dropped = 0

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        record.msg, record.args = record.getMessage(), None  # its arguments as they are now
        return record  # the traceback is formatted by the writer

    def enqueue(self, record: logging.LogRecord) -> None:  # under this handler's lock
        dropped = self.dropped
        if dropped:
            record.msg = f"{record.msg} ({dropped} lines before it dropped: stderr was not read)"
        try:
            self.queue.put_nowait(record)
        except queue.Full:
            self.dropped = dropped + 1
            return
        self.dropped = 0


class LogWriter:
    """``handler`` (what ``logging`` is given) queues; one daemon thread formats each line
    with ``formatter`` and writes it to ``fd``. ``close`` lets it write what is queued,
    waiting ``timeout`` seconds at most in all."""

    def __init__(self, formatter: logging.Formatter, fd: int = 2) -> None:
        self._lines: queue.Queue[logging.LogRecord | None] = queue.Queue(MAX_QUEUED)
        self.handler = _Dropping(self._lines)
        self._formatter = formatter
        self._fd = fd
        self._thread = threading.Thread(target=self._write, name="log-writer", daemon=True)
        self._thread.start()

    def _write(self) -> None:
        while (record := self._lines.get()) is not None:
            line = f"{self._formatter.format(record)}\n".encode(errors="replace")
            with contextlib.suppress(OSError):  # stderr closed: the line is lost, not the helper
                write_all(self._fd, line)

    def close(self, timeout: float) -> None:
        """Write what is queued (unless stderr blocks past ``timeout`` seconds), then stop."""
        deadline = time.monotonic() + timeout
        try:
            self._lines.put(None, timeout=timeout)
        except queue.Full:
            return
        self._thread.join(max(0.0, deadline - time.monotonic()))
