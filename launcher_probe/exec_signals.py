"""The signals a command this process execs gets back at their defaults."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

#: What the interpreter ignores at start-up. An ignored signal stays ignored across
#: ``exec``: without this, what ``exec`` and ``wrap`` run would start with SIGXFSZ ignored,
#: and, opted out of the sandbox, SIGPIPE too (a ``cmd | head`` then fails with EPIPE
#: instead of ending); ``subprocess`` does the same for its children (``restore_signals``).
#: Codex's sandbox itself gives what it runs SIGPIPE ignored (it is a Rust program). The
#: supervisor keeps its own copy (``supervisor_process``: it imports C modules alone).
INTERPRETER_IGNORES = (signal.SIGPIPE, signal.SIGXFSZ)


@contextmanager
def defaults_for_exec() -> Iterator[None]:
    """Inside, the signals the interpreter ignores are at their defaults, for an exec; they
    are put back when the block is left (the exec failed). Off the main thread, where no
    handler can be set, nothing changes."""
    previous = []
    try:
        for number in INTERPRETER_IGNORES:
            previous.append((number, signal.signal(number, signal.SIG_DFL)))
    except ValueError:  # not the main thread
        pass
    try:
        yield
    finally:
        for number, handler in previous:
            signal.signal(number, handler)
