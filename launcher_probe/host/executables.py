"""What a candidate file is, judged by a bounded prefix of its content: a native
executable (for this host's OS and CPU, or a foreign one), a ``#!`` script, or neither.

Every function here is linear in the bytes it is given; at most ``SCRIPT_LIMIT`` bytes of
a file are read.
"""

from __future__ import annotations

import enum
import os
import platform
from dataclasses import dataclass
from typing import Literal

from launcher_probe.host.paths import open_regular_file

#: Bytes read to classify a file; a ``#!`` script is read up to ``SCRIPT_LIMIT`` bytes.
HEAD = 256
SCRIPT_LIMIT = 16 * 1024
_ELF = b"\x7fELF"
Order = Literal["little", "big"]
#: Mach-O magic -> (byte order, bytes per fat_arch entry or 0 for a thin file).
_MACH_O: dict[bytes, tuple[Order, int]] = {
    b"\xfe\xed\xfa\xce": ("big", 0),
    b"\xfe\xed\xfa\xcf": ("big", 0),
    b"\xce\xfa\xed\xfe": ("little", 0),
    b"\xcf\xfa\xed\xfe": ("little", 0),
    b"\xca\xfe\xba\xbe": ("big", 20),
    b"\xca\xfe\xba\xbf": ("big", 32),
}
#: platform.machine() -> (ELF e_machine, Mach-O cputype, name shown).
_CPUS = {
    "x86_64": (62, 0x01000007, "x86_64"),
    "amd64": (62, 0x01000007, "x86_64"),
    "aarch64": (183, 0x0100000C, "arm64"),
    "arm64": (183, 0x0100000C, "arm64"),
}
_ELF_NAMES = {3: "x86", 40: "arm", 62: "x86_64", 183: "arm64", 243: "riscv", 21: "ppc64"}
_MACH_O_NAMES = {7: "x86", 0x01000007: "x86_64", 12: "arm", 0x0100000C: "arm64"}


class FileKind(enum.Enum):
    """What a candidate file is, judged by its content."""

    NATIVE = "native executable"
    NODE_SHIM = "node shim"
    SHELL_SHIM = "shell shim"
    SCRIPT = "script"
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class Shebang:
    """A ``#!`` line: the interpreter's path as written and the name it runs
    (through ``/usr/bin/env [-S]``: the command env looks up, and ``path`` is None)."""

    path: str | None
    name: str


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
    names = [word for word in words[1:] if not word.startswith("-") and "=" not in word]
    return Shebang(None, os.path.basename(names[0])) if names else None


_NODE = frozenset({"node", "nodejs"})
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh"})


def classify(path: str, head: bytes) -> FileKind:
    """Classify a file from its first bytes; a ``.js`` file without ``#!`` is a node shim."""
    if head.startswith(_ELF) or head[:4] in _MACH_O:
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


def foreign_platform(head: bytes) -> str | None:
    """None when ``head`` starts a native executable this host can run; otherwise what it
    is built for (``Mach-O arm64``, ``ELF x86``...). A CPU this module does not know is
    not judged: only the format (ELF, or Mach-O on macOS) is."""
    darwin = platform.system() == "Darwin"
    cpu = _CPUS.get(platform.machine().lower())
    if head.startswith(_ELF):
        if len(head) < 20:
            return "a truncated ELF file"
        order: Order = "little" if head[5] == 1 else "big"
        machine = int.from_bytes(head[18:20], order)
        bits = 64 if head[4] == 2 else 32
        if darwin or (cpu is not None and (machine, bits) != (cpu[0], 64)):
            return f"ELF {_ELF_NAMES.get(machine, f'machine {machine}')} ({bits}-bit)"
        return None
    mach_order, entry = _MACH_O[head[:4]]
    if entry == 0:
        types = [int.from_bytes(head[4:8], mach_order)]
    else:
        count = int.from_bytes(head[4:8], mach_order)
        starts = range(8, min(len(head), 8 + count * entry), entry)
        types = [int.from_bytes(head[at : at + 4], mach_order) for at in starts]
    names = "/".join(_MACH_O_NAMES.get(t, f"cputype {t:#x}") for t in types) or "nothing"
    if not darwin or (cpu is not None and cpu[1] not in types):
        return f"Mach-O {names}"
    return None


def host_cpu() -> str:
    """This host's OS and CPU as shown in details (``Linux x86_64``)."""
    return f"{platform.system()} {platform.machine()}"
