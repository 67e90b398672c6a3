"""Finding the program of a command as ``subprocess`` does (the proxy starts its server so),
and whether that program is a Python one (``wrap`` and ``doctor`` say what that means
under the sandbox: docs/hosts.md)."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Mapping, Sequence

from launcher_probe.interpreter_name import is_python

#: What ``wrap`` says when it starts a Python program with the network restricted.
ASYNCIO_NOTE = (
    "the network is restricted, and Codex's sandbox then denies the wake-up an asyncio "
    "event loop sends itself: a Python server on asyncio (the official MCP SDK, FastMCP) "
    "never answers; give --network (its files stay confined), or run it through proxy"
)
#: Programs that run the Python program they are given, by name.
_PYTHON_RUNNERS = frozenset({"uv", "uvx", "pipx"})
#: How much of a file is read for its ``#!`` line and the line after it.
_HEAD_BYTES = 1024
#: How the second line of pip's and uv's ``/bin/sh`` launcher starts.
_EXEC_LAUNCHER = b"'''exec'"


def find_program(
    name: str, environment: Mapping[str, str] | None = None, cwd: str | None = None
) -> str:
    """``name`` as ``subprocess`` (``execvp`` without its ``/bin/sh`` fallback) finds it
    with ``environment``'s ``PATH`` in ``cwd`` (this process's, by default): itself when it
    holds a slash, else the first file of that name one may execute in a ``PATH`` directory
    (an empty entry, or an empty ``PATH``, is the working directory; ``os.defpath`` without
    ``PATH``). OSError otherwise: the first error that is not the name's absence (a
    directory or a file one may not execute is EACCES; ELOOP, ENAMETOOLONG), else ENOENT."""
    if os.sep in name:
        return name if cwd is None else os.path.join(cwd, name)
    error = errno.ENOENT
    for directory in os.get_exec_path(environment) if name else []:
        path = os.path.join(directory, name)
        path = path if cwd is None else os.path.join(cwd, path)
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


def asyncio_note(
    command: Sequence[str], environment: Mapping[str, str] | None = None, cwd: str | None = None
) -> str | None:
    """``ASYNCIO_NOTE`` when ``command`` starts a Python program (``runs_python``), else
    None; for a command run with the network restricted."""
    return ASYNCIO_NOTE if runs_python(command, environment, cwd) else None


def runs_python(
    command: Sequence[str], environment: Mapping[str, str] | None = None, cwd: str | None = None
) -> bool:
    """Whether ``command`` starts a Python program: a Python interpreter (PyPy's and a
    free-threaded one too), ``uv``, ``uvx`` or ``pipx`` by name (also through ``env``), or a
    regular file (found as ``find_program`` finds it) whose ``#!`` line names one
    (``#!/usr/bin/env -S uv run``), or that is the ``/bin/sh`` launcher pip and uv write when
    an interpreter's path cannot be a ``#!`` line (a space in it, or too long)."""
    from launcher_probe.host.native.file_kind import is_shell, shebang

    if os.path.basename(command[0]) == "env":  # env [-i] [VAR=VALUE] PROGRAM ...
        line = shebang(os.fsencode("#!" + " ".join(command)))
        return line is not None and _names_python(line.name)
    if _names_python(command[0]):
        return True
    from launcher_probe.host.paths.rules import open_regular_file

    try:
        with open_regular_file(find_program(command[0], environment, cwd)) as file:
            head = file.read(_HEAD_BYTES)
    except (OSError, ValueError):  # absent, not a regular file, not readable, a NUL in it
        return False
    line = shebang(head)
    if line is None:
        return False
    if _names_python(line.name):
        return True
    second = head.split(b"\n", 2)[1:2]
    if not is_shell(line) or not second or not second[0].startswith(_EXEC_LAUNCHER):
        return False
    interpreter = second[0][len(_EXEC_LAUNCHER) :].lstrip()  # "/path/to/python" "$0" "$@"
    quoted = interpreter[:1] in (b"'", b'"')
    name = interpreter[1:].split(interpreter[:1])[0] if quoted else interpreter.split(b" ")[0]
    return _names_python(os.fsdecode(name))


def _names_python(word: str) -> bool:
    """A Python interpreter by name (CPython's, a free-threaded ``python3.13t``, PyPy's
    ``pypy3``) or a program that runs one."""
    name = os.path.basename(word)
    if name.startswith("pypy"):
        name = f"python{name[4:]}"
    return is_python(name.removesuffix("t")) or name in _PYTHON_RUNNERS
