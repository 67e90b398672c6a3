"""Is a file a native executable for this host? Judged from a bounded header, never run.

Linux runs ELF: the class (32/64-bit), byte order, OS ABI, type (executable or PIE) and
machine must be this host's. macOS runs Mach-O: a thin image of this host's CPU type, or
a universal (fat) file holding one. A ``#!`` script is never native, whatever it runs.
"""

from __future__ import annotations

import platform
import struct

from launcher_probe.host.paths.rules import open_regular_file
from launcher_probe.json_output import printable
from launcher_probe.value import Value

__all__ = [
    "HEADER_LIMIT",
    "header_problem",
    "host_name",
    "is_executable_format",
    "native_executable_problem",
]

#: Bytes read: enough for the ELF header's fields used here, or a fat header and its table.
HEADER_LIMIT = 1024

_ELF_MAGIC = b"\x7fELF"
_ELF_CLASS = {1: 32, 2: 64}
_ELF_DATA = {1: "little", 2: "big"}
#: EI_OSABI values Linux runs: System V and GNU/Linux.
_LINUX_ABIS = (0, 3)
#: e_type: ET_EXEC and ET_DYN (position-independent executables).
_ELF_TYPES = (2, 3)
#: platform.machine() -> (ELF e_machine, class, byte order).
_ELF_MACHINES = {
    "x86_64": (62, 64, "little"),
    "amd64": (62, 64, "little"),
    "aarch64": (183, 64, "little"),
    "arm64": (183, 64, "little"),
    "i386": (3, 32, "little"),
    "i686": (3, 32, "little"),
    "armv7l": (40, 32, "little"),
    "ppc64le": (21, 64, "little"),
    "ppc64": (21, 64, "big"),
    "s390x": (22, 64, "big"),
    "riscv64": (243, 64, "little"),
}
_ELF_MACHINE_NAMES = {62: "x86_64", 183: "aarch64", 3: "i386", 40: "arm", 21: "ppc64"}

#: Thin Mach-O magics as stored in the file, 64-bit little-endian first.
_MACHO_MAGICS = (b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe", b"\xfe\xed\xfa\xcf", b"\xfe\xed\xfa\xce")
_FAT_MAGIC = b"\xca\xfe\xba\xbe"
_FAT_MAGIC_64 = b"\xca\xfe\xba\xbf"
#: More arches than this: a Java class file (same magic), not a universal binary.
_FAT_ARCH_LIMIT = 20
_MH_EXECUTE = 2
#: platform.machine() -> Mach-O cputype.
_MACHO_CPUS = {"x86_64": 0x01000007, "arm64": 0x0100000C}


class _Host(Value):
    __slots__ = ("system", "machine")
    system: str
    machine: str

    def __init__(self, system: str, machine: str) -> None:
        super().__init__(system=system, machine=machine)


def _host() -> _Host:
    return _Host(platform.system(), platform.machine())


def host_name() -> str:
    """This host's OS and CPU as shown in details (``Linux x86_64``)."""
    host = _host()
    return f"{host.system} {host.machine}"


def is_executable_format(head: bytes) -> bool:
    """True when ``head`` starts an ELF or Mach-O file (thin or universal), for any host."""
    return head.startswith((_ELF_MAGIC, *_MACHO_MAGICS, _FAT_MAGIC, _FAT_MAGIC_64))


def header_problem(head: bytes) -> str | None:
    """What the file starting with ``head`` is when it is not a native executable for this
    host (``a #! script``, ``a 32-bit little-endian ELF file for i386``...), else None."""
    host = _host()
    if head.startswith(b"#!"):
        return "a #! script"
    if head.startswith(_ELF_MAGIC):
        return _elf_problem(head, host) if host.system == "Linux" else "an ELF file"
    if head.startswith((*_MACHO_MAGICS, _FAT_MAGIC, _FAT_MAGIC_64)):
        return _macho_problem(head, host) if host.system == "Darwin" else "a Mach-O file"
    return "neither ELF nor Mach-O"


def native_executable_problem(path: str) -> str | None:
    """Why ``path`` is not a native executable for this host, or None when it is one.

    Reads at most ``HEADER_LIMIT`` bytes, through ``open_regular_file`` (never blocks on
    a FIFO).
    """
    shown = printable(path)
    try:
        with open_regular_file(path) as file:
            head = file.read(HEADER_LIMIT)
    except OSError as error:
        return f"cannot read {shown}: {error.strerror or error}"
    problem = header_problem(head)
    if problem is None:
        return None
    return f"{shown} is {problem}, not a native executable for {host_name()}"


def _elf_problem(head: bytes, host: _Host) -> str | None:
    expected = _ELF_MACHINES.get(host.machine)
    if len(head) < 20 or head[4] not in _ELF_CLASS or head[5] not in _ELF_DATA:
        return "a truncated or malformed ELF file"
    bits, order = _ELF_CLASS[head[4]], _ELF_DATA[head[5]]
    e_type, e_machine = struct.unpack_from("<HH" if order == "little" else ">HH", head, 16)
    name = _ELF_MACHINE_NAMES.get(e_machine, f"machine {e_machine}")
    built_for = f"a {bits}-bit {order}-endian ELF file for {name}"
    if expected is None or (e_machine, bits, order) != expected:
        return built_for
    if head[7] not in _LINUX_ABIS:
        return f"an ELF file for another OS (OS ABI {head[7]})"
    if e_type not in _ELF_TYPES:
        return f"an ELF file that is no executable (type {e_type})"
    return None


def _macho_problem(head: bytes, host: _Host) -> str | None:
    cpu = _MACHO_CPUS.get(host.machine)
    if head.startswith((_FAT_MAGIC, _FAT_MAGIC_64)):
        return _fat_problem(head, cpu)
    if len(head) < 16:
        return "a truncated Mach-O file"
    order = "<" if head[:4] in _MACHO_MAGICS[:2] else ">"
    cputype, _, filetype = struct.unpack_from(f"{order}iii", head, 4)
    if cputype != cpu:
        return f"a Mach-O file for CPU type {cputype:#x}"
    if filetype != _MH_EXECUTE:
        return f"a Mach-O file that is no executable (type {filetype})"
    return None


def _fat_problem(head: bytes, cpu: int | None) -> str | None:
    if len(head) < 8:
        return "a truncated universal file"
    count = struct.unpack_from(">I", head, 4)[0]
    entry = 32 if head.startswith(_FAT_MAGIC_64) else 20
    if not 0 < count <= _FAT_ARCH_LIMIT or len(head) < 8 + count * entry:
        return "a malformed universal file (or a Java class file)"
    cpus = [struct.unpack_from(">i", head, 8 + index * entry)[0] for index in range(count)]
    if cpu in cpus:
        return None
    return f"a universal file without this CPU (types {', '.join(f'{c:#x}' for c in cpus)})"
