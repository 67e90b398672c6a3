"""The proxy's own lines on stderr, each said once."""

from __future__ import annotations

from _thread import allocate_lock

from launcher_probe.messages import say


class Notes:
    """Says each distinct message once (a call per request must not flood the log)."""

    def __init__(self) -> None:
        self._said: set[str] = set()
        self._lock = allocate_lock()

    def once(self, message: str) -> None:
        with self._lock:
            if message in self._said:
                return
            self._said.add(message)
        say(f"proxy: {message}")
