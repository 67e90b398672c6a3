"""Stub executables for layouts built on disk: ELF or Mach-O headers, never executed."""

from __future__ import annotations

import os
import platform
from pathlib import Path

#: CPU name -> (ELF e_machine, Mach-O cputype).
CPUS = {"x86_64": (62, 0x01000007), "arm64": (183, 0x0100000C)}
HOST_CPU = {"amd64": "x86_64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
HOST_FORMAT = "macho" if platform.system() == "Darwin" else "elf"


def header(fmt: str = HOST_FORMAT, cpu: str = HOST_CPU) -> bytes:
    """A 64-bit little-endian ELF or Mach-O header for ``cpu`` (64 bytes)."""
    elf_machine, macho_type = CPUS[cpu]
    if fmt == "elf":
        ident = b"\x7fELF\x02\x01\x01" + bytes(9)
        return ident + (2).to_bytes(2, "little") + elf_machine.to_bytes(2, "little") + bytes(44)
    # magic, cputype, cpusubtype, filetype MH_EXECUTE
    mach_o = b"\xcf\xfa\xed\xfe" + macho_type.to_bytes(4, "little") + bytes(4)
    return mach_o + (2).to_bytes(4, "little") + bytes(48)


def native_stub(
    path: Path, *, fmt: str = HOST_FORMAT, cpu: str = HOST_CPU, mode: int = 0o755
) -> Path:
    """Write a stub executable (``header(fmt, cpu)``) at ``path``, creating its directory."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(header(fmt, cpu))
    os.chmod(path, mode)
    return path


def foreign() -> tuple[str, str]:
    """A (format, cpu) this host cannot run."""
    return ("elf" if HOST_FORMAT == "macho" else "macho"), HOST_CPU
