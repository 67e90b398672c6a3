"""The signals a command this process execs gets back at their defaults."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

#: What the interpreter ignores at start-up. An ignored signal stays ignored across
#: ``exec``, so without this a command run by ``wrap`` or ``exec`` would start with
#: SIGPIPE ignored (a ``cmd | head`` inside then fails with EPIPE instead of ending);
#: ``subprocess`` does the same for its children (``restore_signals``).
INTERPRETER_IGNORES = (signal.SIGPIPE, signal.SIGXFSZ)


@contextmanager
def defaults_for_exec() -> Iterator[None]:
    """Inside, the signals the interpreter ignores are at their defaults, for an exec; they
    are put back when the block is left (the exec failed)."""
    previous = [(number, signal.signal(number, signal.SIG_DFL)) for number in INTERPRETER_IGNORES]
    try:
        yield
    finally:
        for number, handler in previous:
            signal.signal(number, handler)
