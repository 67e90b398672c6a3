"""Finding the program of a command as ``subprocess`` does (the proxy starts its server so),
and whether that program is a Python one (``wrap`` and ``doctor`` say what that means
under the sandbox: docs/hosts.md)."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence

from launcher_probe.interpreter_name import is_python

#: What ``wrap`` says when it starts a Python program with the network restricted.
ASYNCIO_NOTE = (
    "the network is restricted, and Codex's sandbox then denies the wake-up an asyncio "
    "event loop sends itself: a Python server on asyncio (the official MCP SDK, FastMCP) "
    "never answers; give --network (its files stay confined), or run it through proxy"
)
#: Programs that run the Python program they are given, by name.
_PYTHON_RUNNERS = frozenset({"uv", "uvx", "pipx"})
#: How much of a file is read for its ``#!`` line.
_SHEBANG_BYTES = 256


def find_program(name: str) -> str:
    """``name`` as ``subprocess`` (``execvp`` without its ``/bin/sh`` fallback) finds it:
    itself when it holds a slash, else the first file of that name one may execute in a
    ``PATH`` directory (an empty entry, or an empty ``PATH``, is the working directory;
    ``os.defpath`` without ``PATH``). OSError otherwise: the first error that is not the
    name's absence (a directory or a file one may not execute is EACCES; ELOOP,
    ENAMETOOLONG), else ENOENT."""
    if os.sep in name:
        return name
    error = errno.ENOENT
    for directory in os.get_exec_path() if name else []:
        path = os.path.join(directory, name)
        try:
            found = os.stat(path)
        except OSError as failure:
            if error == errno.ENOENT and failure.errno not in (None, errno.ENOENT, errno.ENOTDIR):
                error = failure.errno
            continue
        if not stat.S_ISDIR(found.st_mode) and os.access(path, os.X_OK):
            return path
        error = errno.EACCES if error == errno.ENOENT else error
    raise OSError(error, os.strerror(error), name)


def runs_python(command: Sequence[str]) -> bool:
    """Whether ``command`` starts a Python program: a Python interpreter, ``uv``, ``uvx`` or
    ``pipx`` by name, or a regular file (found as ``find_program`` finds it) whose ``#!``
    line names one (``#!/usr/bin/env python3``, ``#!/usr/bin/env -S uv run``)."""
    if _names_python(os.fsencode(command[0])):
        return True
    from launcher_probe.host.paths.rules import open_regular_file

    try:
        with open_regular_file(find_program(command[0])) as file:
            first = file.readline(_SHEBANG_BYTES)
    except (OSError, ValueError):  # absent, not a regular file, not readable, a NUL in it
        return False
    return first.startswith(b"#!") and any(map(_names_python, first[2:].split()[:3]))


def _names_python(word: bytes) -> bool:
    name = os.path.basename(word).decode("utf-8", "replace")
    return is_python(name) or name in _PYTHON_RUNNERS
