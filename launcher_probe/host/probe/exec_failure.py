"""Why the kernel would not start a file that exists: name what is missing.

``execve`` answers ENOENT both when the file is missing and when what it needs to start
is: the ELF interpreter named in its ``PT_INTERP`` (a musl or glibc loader that is not
installed), or the program after a ``#!``. The error then names the file itself, which
exists; this module names the missing part instead, from a bounded read of the file.
"""

from __future__ import annotations

import errno
import os
import struct

from launcher_probe.host.paths.rules import open_regular_file
from launcher_probe.json_output import printable

#: Bytes of the file read at most: the ELF header, its program headers and the interpreter.
READ_LIMIT = 1 << 16
_PT_INTERP = 3
_INTERP_LIMIT = 4096


def exec_failure(path: str, error: OSError) -> str:
    """One line saying why ``path`` could not be executed (without the path itself): the
    missing ELF interpreter or ``#!`` program when that is the cause, else the error."""
    if error.errno == errno.ENOENT and os.path.lexists(path):
        needed = _needed_program(path)
        if needed is not None and not os.path.exists(needed[1]):
            kind, program = needed
            return f"its {kind} {printable(program)} does not exist (No such file or directory)"
    name = errno.errorcode.get(error.errno or 0, "")
    return f"{error.strerror or error}{f' ({name})' if name else ''}"


def _needed_program(path: str) -> tuple[str, str] | None:
    """(what, path) of the program the kernel loads to run ``path``, if it names one."""
    try:
        with open_regular_file(path) as file:
            head = file.read(READ_LIMIT)
    except (OSError, ValueError):
        return None
    if head.startswith(b"#!"):
        words = head[2:].split(b"\n", 1)[0].split()
        return ("#! interpreter", os.fsdecode(words[0])) if words else None
    interpreter = _elf_interpreter(head)
    return None if interpreter is None else ("ELF interpreter", interpreter)


def _elf_interpreter(head: bytes) -> str | None:
    """The ``PT_INTERP`` path of the ELF file starting with ``head``, if it holds one."""
    if not head.startswith(b"\x7fELF") or len(head) < 64 or head[4] not in (1, 2):
        return None
    order = "<" if head[5] == 1 else ">"
    if head[4] == 2:  # 64-bit: e_phoff at 32, e_phentsize and e_phnum at 54
        (phoff,) = struct.unpack_from(f"{order}Q", head, 32)
        entsize, count = struct.unpack_from(f"{order}HH", head, 54)
        layout, fields = f"{order}IIQQQQ", (0, 2, 5)  # p_type, p_offset, p_filesz
    else:  # 32-bit: e_phoff at 28, e_phentsize and e_phnum at 42
        (phoff,) = struct.unpack_from(f"{order}I", head, 28)
        entsize, count = struct.unpack_from(f"{order}HH", head, 42)
        layout, fields = f"{order}IIIIII", (0, 1, 4)
    if entsize < struct.calcsize(layout):
        return None
    for index in range(count):
        start = phoff + index * entsize
        if start + struct.calcsize(layout) > len(head):
            return None
        entry = struct.unpack_from(layout, head, start)
        kind, offset, size = (entry[field] for field in fields)
        if kind == _PT_INTERP:
            if not 0 < size <= _INTERP_LIMIT or offset + size > len(head):
                return None
            return os.fsdecode(head[offset : offset + size].split(b"\0", 1)[0])
    return None
