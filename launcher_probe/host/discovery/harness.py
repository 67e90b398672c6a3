"""The ``harness`` source: the nearest ancestor process running the Codex CLI (psutil).

An ancestor runs Codex when its executable is named ``codex`` or ``codex-<triple>`` (a
release binary or the Homebrew cask's), or when it is an interpreter running, through a
``#!`` line, a script named ``codex`` or ``codex.js`` (the npm Node shim, or a scripted
stand-in); then ``cmdline[1]`` names that script. The interpreter counts when its name
starts with the ``#!`` line's, or when the ``#!`` line's interpreter is the same file as
the running one (``#!/bin/sh`` running as ``dash``). A script that fails the path rules
is not read, so it is not recognised.
"""

from __future__ import annotations

import os
import shutil
from typing import TYPE_CHECKING

from launcher_probe.contract import Reason, Source
from launcher_probe.host.discovery.candidate import EXECUTABLE, Candidate, make_candidate
from launcher_probe.host.native.file_kind import read_head, shebang
from launcher_probe.host.native.shims import TRIPLES
from launcher_probe.host.paths.rules import PathVerdict, check_launcher_path
from launcher_probe.json_output import printable

if TYPE_CHECKING:
    import psutil


def harness_candidate() -> Candidate | None:
    """The nearest ancestor process running the Codex CLI, as a candidate."""
    import psutil

    try:
        ancestors = psutil.Process().parents()
    except psutil.Error:
        return None
    for process in ancestors:
        try:
            found = _codex_of(process)
        except psutil.NoSuchProcess:
            continue
        if found is not None:
            return found
    return None


def _codex_of(process: psutil.Process) -> Candidate | None:
    """A candidate when ``process`` runs the Codex CLI (see the module's docstring)."""
    import psutil

    try:
        exe = process.exe()
    except (psutil.AccessDenied, psutil.ZombieProcess):
        exe = ""
    exe = exe.removesuffix(" (deleted)")
    if is_codex_executable(exe):
        if _replaced_on_disk(process.pid, exe):
            detail = (
                f"the running harness binary {printable(exe)} (pid {process.pid}) was replaced "
                "or deleted on disk; the file now at that path is not the one running"
            )
            return Candidate(
                Source.HARNESS, exe, None, PathVerdict(False, Reason.NOT_FOUND, detail)
            )
        return make_candidate(Source.HARNESS, exe)
    try:
        script = script_named(process.cmdline())
        if script is None:
            return None
        if not os.path.isabs(script):
            script = os.path.join(process.cwd(), script)
    except (psutil.AccessDenied, psutil.ZombieProcess):
        return None
    if not check_launcher_path(script).ok or not _runs(exe, read_head(script)):
        return None
    return make_candidate(Source.HARNESS, script)


def script_named(argv: list[str]) -> str | None:
    """The script ``argv`` runs when it is named as Codex's (``codex`` or ``codex.js``), as
    given (maybe relative); None when it runs no such script."""
    script = argv[1] if len(argv) > 1 else ""
    return script if os.path.basename(script) in (EXECUTABLE, "codex.js") else None


def is_codex_executable(exe: str) -> bool:
    """True for an executable named ``codex`` or ``codex-<a Codex target triple>``."""
    name = os.path.basename(exe)
    return name == EXECUTABLE or (name.startswith("codex-") and name[6:] in TRIPLES)


def _runs(exe: str, head: bytes) -> bool:
    """True when the interpreter ``exe`` is the one the ``#!`` line of ``head`` names."""
    line = shebang(head)
    if line is None or not exe:
        return False
    if os.path.basename(exe).startswith(line.name):
        return True
    named = line.path if line.path is not None else shutil.which(line.name)
    try:
        return named is not None and os.path.samefile(named, exe)
    except (OSError, ValueError):
        return False


def _replaced_on_disk(pid: int, exe: str) -> bool:
    """True when the file at ``exe`` is not the running image (Linux ``/proc``)."""
    try:
        running = os.stat(f"/proc/{pid}/exe")
    except OSError:
        return False
    try:
        on_disk = os.stat(exe)
    except (OSError, ValueError):
        return True
    return (running.st_dev, running.st_ino) != (on_disk.st_dev, on_disk.st_ino)
