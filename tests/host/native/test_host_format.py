"""The executable-format check, on real files: this host's ELF files, scripts, crafted headers."""

from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

import pytest

from launcher_probe.host.native.host_format import (
    _Host,
    _macho_problem,
    host_name,
    native_executable_problem,
)
from tests.server.launchers import FOREIGN_NAME, elf_header, elf_named, foreign_elf

pytestmark = pytest.mark.skipif(os.uname().sysname != "Linux", reason="ELF host checks")

HOST_MACHINE = {"x86_64": 62, "aarch64": 183}.get(os.uname().machine, 0)


def write(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    path.chmod(0o755)
    return str(path)


def test_real_executables_of_this_host_pass(tmp_path: Path, real_codex: Path) -> None:
    assert native_executable_problem(str(real_codex)) is None
    assert native_executable_problem(str(elf_named(tmp_path, "true"))) is None


def test_a_script_is_never_native(tmp_path: Path) -> None:
    script = write(tmp_path / "codex", b"#!/bin/sh\nexit 0\n")
    assert (
        native_executable_problem(script)
        == f"{script} is a #! script, not a native executable for {host_name()}"
    )
    sh = shutil.which("sh")
    assert sh is not None
    assert native_executable_problem(sh) is None  # sh itself is native, unlike its scripts


def test_a_foreign_cpu_is_refused(tmp_path: Path) -> None:
    problem = native_executable_problem(str(foreign_elf(tmp_path)))
    assert problem is not None
    assert f"ELF file for {FOREIGN_NAME}" in problem
    assert "not a native executable for Linux" in problem


@pytest.mark.skipif(not HOST_MACHINE, reason="needs an x86_64 or aarch64 host")
@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ({"bits": 32}, "32-bit little-endian ELF file"),
        ({"order": "big"}, "64-bit big-endian ELF file"),
        ({"abi": 9}, "an ELF file for another OS (OS ABI 9)"),
        ({"kind": 1}, "an ELF file that is no executable (type 1)"),
    ],
)
def test_class_byte_order_abi_and_type_must_be_this_hosts(
    tmp_path: Path, header: dict[str, object], expected: str
) -> None:
    path = write(tmp_path / "codex", elf_header(machine=HOST_MACHINE, **header))  # type: ignore[arg-type]
    problem = native_executable_problem(path)
    assert problem is not None and expected in problem


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", "neither ELF nor Mach-O"),
        (b"\x7fELF\x02", "a truncated or malformed ELF file"),
        (b"\xcf\xfa\xed\xfe" + bytes(60), "a Mach-O file"),
        (b"MZ\x90\x00" + bytes(60), "neither ELF nor Mach-O"),
    ],
)
def test_other_formats_are_refused(tmp_path: Path, data: bytes, expected: str) -> None:
    problem = native_executable_problem(write(tmp_path / "codex", data))
    assert problem is not None and expected in problem


def test_only_regular_files_are_read(tmp_path: Path) -> None:
    fifo = tmp_path / "codex"
    os.mkfifo(fifo)
    assert native_executable_problem(str(fifo)) == f"cannot read {fifo}: not a regular file"
    assert native_executable_problem(str(tmp_path / "absent")) is not None


ARM64, X86_64 = 0x0100000C, 0x01000007


def macho(cpu: int, filetype: int = 2) -> bytes:
    return b"\xcf\xfa\xed\xfe" + struct.pack("<iii", cpu, 0, filetype) + bytes(16)


def fat(*cpus: int, count: int | None = None) -> bytes:
    table = b"".join(struct.pack(">iiIII", cpu, 0, 4096, 4096, 12) for cpu in cpus)
    return b"\xca\xfe\xba\xbe" + struct.pack(">I", len(cpus) if count is None else count) + table


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (macho(ARM64), None),
        (macho(X86_64), "a Mach-O file for CPU type 0x1000007"),
        (macho(ARM64, filetype=6), "a Mach-O file that is no executable (type 6)"),
        (fat(X86_64, ARM64), None),
        (fat(X86_64), "a universal file without this CPU (types 0x1000007)"),
        (fat(count=65), "a malformed universal file (or a Java class file)"),
    ],
)
def test_mach_o_on_an_arm64_mac(head: bytes, expected: str | None) -> None:
    assert _macho_problem(head, _Host("Darwin", "arm64")) == expected
