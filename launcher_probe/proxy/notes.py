"""The proxy's own lines on stderr, each said once (once more after a new launcher decision)."""

from __future__ import annotations

from _thread import allocate_lock
from contextlib import suppress

from launcher_probe.messages import say

#: The most distinct messages remembered; past it they are forgotten, and said once again.
MAX_REMEMBERED = 256
#: The most characters of a message said (one can quote what a host sent).
MAX_SAID = 1000


class Notes:
    """Says each distinct message once (a call per request must not flood the log), at most
    ``MAX_SAID`` characters of it, and remembers ``MAX_REMEMBERED`` of them at most."""

    def __init__(self) -> None:
        self._said: set[str] = set()
        self._lock = allocate_lock()

    def once(self, message: str) -> None:
        message = shortened(message, MAX_SAID)
        with self._lock:
            if message in self._said:
                return
            if len(self._said) >= MAX_REMEMBERED:
                self._said.clear()
            self._said.add(message)
        with suppress(OSError):  # a stderr whose reader left: the relay goes on regardless
            say(f"proxy: {message}")

    def afresh(self, message: str) -> None:
        """Say ``message`` (a new launcher decision) and forget what was said: each line is
        news once more, so that a second change of the binary is told as the first was."""
        with self._lock:
            self._said.clear()
        self.once(message)


def shortened(text: str, limit: int) -> str:
    """``text``, or its first ``limit`` characters and how many more there were."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"
