"""Files that pose as a launcher: real ELF files under other names, scripts, foreign ELFs."""

from __future__ import annotations

import os
import platform
import shutil
import struct
from pathlib import Path

#: ELF e_machine of a CPU that is not this host's (aarch64 here, x86_64 on an aarch64 host).
FOREIGN_MACHINE, FOREIGN_NAME = (
    (62, "x86_64") if platform.machine() in ("aarch64", "arm64") else (183, "aarch64")
)


def _place(directory: Path, name: str) -> Path:
    directory.mkdir(mode=0o755, parents=True, exist_ok=True)
    return directory / name


def elf_named(directory: Path, name: str) -> Path:
    """A copy of a real native executable of this host (``true``) as ``directory/name``."""
    target = _place(directory, name)
    true = shutil.which("true")
    assert true is not None
    shutil.copy(os.path.realpath(true), target)
    target.chmod(0o755)
    return target


def script_named(directory: Path, name: str, marker: Path) -> Path:
    """A ``#!/bin/sh`` script that answers like Codex and touches ``marker`` when run."""
    target = _place(directory, name)
    target.write_text(f'#!/bin/sh\ntouch "{marker}"\necho "codex-cli 0.169.0"\n')
    target.chmod(0o755)
    return target


def elf_header(
    *, machine: int, bits: int = 64, order: str = "little", abi: int = 0, kind: int = 2
) -> bytes:
    """A 64-byte ELF header (the rest of the file is irrelevant to a header check)."""
    ident = b"\x7fELF" + bytes([1 if bits == 32 else 2, 1 if order == "little" else 2, 1, abi])
    fields = struct.pack("<HHI" if order == "little" else ">HHI", kind, machine, 1)
    return (ident + bytes(8) + fields).ljust(64, b"\0")


def foreign_elf(directory: Path, name: str = "codex") -> Path:
    """An executable file whose ELF header names another CPU than this host's."""
    target = _place(directory, name)
    target.write_bytes(elf_header(machine=FOREIGN_MACHINE) + bytes(4096))
    target.chmod(0o755)
    return target
