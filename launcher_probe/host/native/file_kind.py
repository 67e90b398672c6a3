"""What a candidate file is, judged by a bounded prefix of its content: a native
executable (for this host's OS and CPU, or a foreign one), a ``#!`` script, or neither.

Every function here is linear in the bytes it is given; at most ``SCRIPT_LIMIT`` bytes of
a file are read.
"""

from __future__ import annotations

import enum
import os

from launcher_probe.host.native.host_format import HEADER_LIMIT, is_executable_format
from launcher_probe.host.paths.rules import open_regular_file
from launcher_probe.value import Value

#: Bytes read to classify a file (enough for a universal binary's table); a ``#!`` script is
#: read up to ``SCRIPT_LIMIT`` bytes.
HEAD = HEADER_LIMIT
SCRIPT_LIMIT = 16 * 1024


class FileKind(enum.Enum):
    """What a candidate file is, judged by its content."""

    NATIVE = "native executable"
    NODE_SHIM = "node shim"
    SHELL_SHIM = "shell shim"
    SCRIPT = "script"
    OTHER = "other"


class Shebang(Value):
    """A ``#!`` line: the interpreter's path as written and the name it runs
    (through ``/usr/bin/env [-S]``: the command env looks up, and ``path`` is None)."""

    __slots__ = ("path", "name")
    path: str | None
    name: str

    def __init__(self, path: str | None, name: str) -> None:
        super().__init__(path=path, name=name)


def read_head(path: str) -> bytes:
    """The first bytes of a regular file (up to ``SCRIPT_LIMIT`` of a script); b"" otherwise."""
    try:
        with open_regular_file(path) as file:
            head = file.read(HEAD)
            if head.startswith(b"#!"):
                head += file.read(SCRIPT_LIMIT - len(head))
            return head
    except (OSError, ValueError):
        return b""


def shebang(head: bytes) -> Shebang | None:
    """The ``#!`` interpreter of ``head``, looking through ``/usr/bin/env [-S]``."""
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode("utf-8", "surrogateescape").split()
    if not words:
        return None
    if os.path.basename(words[0]) != "env":
        return Shebang(words[0], os.path.basename(words[0]))
    program = _env_program(words[1:])
    return None if program is None else Shebang(None, os.path.basename(program))


#: ``env``'s options whose value is the word after them (GNU coreutils', the BSDs').
_ENV_VALUED = frozenset({"-u", "--unset", "-C", "--chdir", "-P", "-a", "--argv0"})


#: ``-S``'s string given in the same word: ``-Sprogram ...``, ``--split-string=program ...``.
_SPLIT_ATTACHED = ("--split-string=", "-S")


def _env_program(words: list[str]) -> str | None:
    """The program ``env WORDS`` runs: the first word past its options (a valued one takes
    the next word too; ``-S`` splits the rest, as it is split here, its string in its own
    word or attached, and unquotes it), ``--`` and its ``NAME=VALUE`` assignments; None
    when there is none."""
    rest = iter(words)
    options = True
    for word in rest:
        if options:
            for prefix in _SPLIT_ATTACHED:
                if word.startswith(prefix) and len(word) > len(prefix):
                    word = word[len(prefix) :]
                    break
        if options and word == "--":
            options = False
        elif options and word in _ENV_VALUED:
            next(rest, None)
        elif not (options and word.startswith("-")) and "=" not in word:
            return _unquoted(word)
    return None


def _unquoted(word: str) -> str:
    """``word`` without the quotes around it that ``env -S`` takes away."""
    if len(word) >= 2 and word[0] == word[-1] and word[0] in "'\"":
        return word[1:-1]
    return word


_NODE = frozenset({"node", "nodejs"})
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh"})


def classify(path: str, head: bytes) -> FileKind:
    """Classify a file from its first bytes; a ``.js`` file without ``#!`` is a node shim."""
    if is_executable_format(head):
        return FileKind.NATIVE
    line = shebang(head)
    if line is None:
        return FileKind.NODE_SHIM if path.endswith(".js") and head else FileKind.OTHER
    if line.name in _NODE:
        return FileKind.NODE_SHIM
    if line.name in _SHELLS and b"codex.js" in head:
        return FileKind.SHELL_SHIM
    return FileKind.SCRIPT


def is_shell(line: Shebang) -> bool:
    """True when the ``#!`` line runs a POSIX-family shell."""
    return line.name in _SHELLS
