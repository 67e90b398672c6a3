"""Bounded logging for what a client can cause at will (a refused connection, a decision
for a path it made up): a rate per kind of line, the rest counted, and long texts cut."""

from __future__ import annotations

import time

#: The longest text (a path, a detail) put into a log line; longer ones are cut.
MAX_SHOWN = 240


def shown(text: str) -> str:
    """``text``, cut to MAX_SHOWN characters (saying how long it was)."""
    if len(text) <= MAX_SHOWN:
        return text
    return f"{text[: MAX_SHOWN - 40]}... ({len(text)} characters)"


class LogBudget:
    """A token bucket: ``burst`` lines at once, then ``per_second``; not thread-safe beyond
    what a missed count costs (one line more or less)."""

    def __init__(self, per_second: float = 5.0, burst: int = 20) -> None:
        self.per_second = per_second
        self.burst = float(burst)
        self.tokens = float(burst)
        self.stamp = time.monotonic()
        self.suppressed = 0

    def allow(self) -> str | None:
        """None when this line must not be logged (counted); else the suffix to log with
        it: empty, or how many lines were left out since the last one."""
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.per_second)
        self.stamp = now
        if self.tokens < 1.0:
            self.suppressed += 1
            return None
        self.tokens -= 1.0
        left_out, self.suppressed = self.suppressed, 0
        return f" ({left_out} similar line(s) left out)" if left_out else ""
