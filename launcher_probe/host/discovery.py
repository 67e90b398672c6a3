"""Discovery: every place the Codex CLI could be on this host, in order, explained.

Sources, in order: ``explicit`` (the caller's path), ``env`` (``LAUNCHER_PROBE_CODEX``;
empty counts as unset), ``config`` (``codex`` in the config file) — the operator's word:
the first of these present is the only candidate, even when invalid — then ``harness``
(the nearest ancestor process running the Codex CLI), ``standalone``, ``path`` and
``known`` install places. A place that does not exist is no candidate; every place
looked at is listed in ``searched``. Candidates resolving to the same native file are
merged: the first keeps its place, the others go to ``also_found_at``.
"""

from __future__ import annotations

import enum
import glob
import os
import platform
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from launcher_probe.contract import Reason
from launcher_probe.host.config import configured_codex
from launcher_probe.host.paths import (
    PathVerdict,
    check_launcher_path,
    open_regular_file,
    printable,
)
from launcher_probe.host.shims import interpreter, read_head, resolve_native

if TYPE_CHECKING:
    import psutil

#: Environment variable naming the operator's Codex executable.
ENV_VAR = "LAUNCHER_PROBE_CODEX"
EXECUTABLE = "codex"
#: Path-rule failures after which there is nothing to resolve.
_UNRESOLVABLE = (Reason.NOT_ABSOLUTE, Reason.NOT_UTF8, Reason.NOT_FOUND)
#: Bytes of ``~/.npmrc`` read for its ``prefix=``.
_NPMRC_LIMIT = 64 * 1024


class Source(enum.StrEnum):
    """Where a candidate came from; the first three are the operator's word."""

    EXPLICIT = "explicit"
    ENV = "env"
    CONFIG = "config"
    HARNESS = "harness"
    STANDALONE = "standalone"
    PATH = "path"
    KNOWN = "known"


@dataclass(frozen=True, slots=True)
class Candidate:
    """A possible launcher: the path as found, the native binary it resolves to, its verdict.

    ``verdict`` applies the path rules to the path as found (its symlink chain) and to the
    native binary a shim resolves to; ``resolved`` is None when nothing could be resolved.
    """

    source: Source
    path: str
    resolved: str | None
    verdict: PathVerdict
    also_found_at: tuple[tuple[Source, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        """``{"source","path","resolved","ok","reason","detail","also_found_at"}``."""
        return {
            "source": str(self.source),
            "path": printable(self.path),
            "resolved": None if self.resolved is None else printable(self.resolved),
            "ok": self.verdict.ok,
            "reason": None if self.verdict.reason is None else str(self.verdict.reason),
            "detail": printable(self.verdict.detail),
            "also_found_at": [
                {"source": str(source), "path": printable(path)}
                for source, path in self.also_found_at
            ],
        }


@dataclass(frozen=True, slots=True)
class Discovery:
    """Candidates in order, the entries that were skipped (with why), and what was searched.

    ``skipped`` items are ``{"source", "entry", "reason"}`` with reason ``empty`` or
    ``relative`` (a PATH entry, ``NAME=value`` for a location variable, or a place under a
    relative HOME); ``searched`` items are ``{"source", "path"}`` (``path`` may hold a glob ``*``).
    """

    candidates: tuple[Candidate, ...]
    skipped: tuple[dict[str, str], ...]
    searched: tuple[dict[str, str], ...] = ()

    @property
    def usable(self) -> tuple[Candidate, ...]:
        """The candidates that pass every path rule, in order."""
        return tuple(candidate for candidate in self.candidates if candidate.verdict.ok)

    def to_json(self) -> dict[str, Any]:
        """``{"candidates": [...], "skipped": [...], "searched": [...]}``."""
        return {
            "candidates": [candidate.to_json() for candidate in self.candidates],
            "skipped": [dict(item) for item in self.skipped],
            "searched": [dict(item) for item in self.searched],
        }


def discover(codex: str | None = None) -> Discovery:
    """Every candidate in order; only the operator's one when explicit/env/config names one."""
    operator = _operator_choice(codex)
    if operator is not None:
        source, path = operator
        searched = ({"source": str(source), "path": printable(path)},)
        return Discovery((make_candidate(source, path),), (), searched)
    search = _Search()
    search.harness()
    search.standalone()
    search.path_entries()
    search.known_places()
    return search.result()


def make_candidate(source: Source, path: str) -> Candidate:
    """Apply the path rules to ``path`` and, through any shim, to its native binary."""
    found = check_launcher_path(path)
    if found.reason in _UNRESOLVABLE:
        return Candidate(source, path, None, found)
    resolution = resolve_native(path)
    if resolution.native is None:
        tried = ", ".join(printable(tried) for tried in resolution.tried)
        unresolved = PathVerdict(
            False, Reason.SHIM_UNRESOLVED, f"{resolution.detail} (tried: {tried})"
        )
        return Candidate(source, path, None, found if not found.ok else unresolved)
    if not found.ok or resolution.native == path:
        return Candidate(source, path, resolution.native, found)
    # The native binary is what gets published: it must pass on its own (UTF-8 included).
    return Candidate(source, path, resolution.native, check_launcher_path(resolution.native))


def _operator_choice(codex: str | None) -> tuple[Source, str] | None:
    if codex is not None:
        return Source.EXPLICIT, codex
    from_env = os.environ.get(ENV_VAR)
    if from_env:
        return Source.ENV, from_env
    configured = configured_codex()
    if configured is not None:
        return Source.CONFIG, configured
    return None


class _Search:
    """Collects candidates (deduplicated by native file), skipped entries and places."""

    def __init__(self) -> None:
        self.candidates: list[Candidate] = []
        self.index: dict[object, int] = {}
        self.skipped: list[dict[str, str]] = []
        self.searched: list[dict[str, str]] = []

    def result(self) -> Discovery:
        return Discovery(tuple(self.candidates), tuple(self.skipped), tuple(self.searched))

    def look(self, source: Source, place: str, *, pattern: str | None = None) -> None:
        """Search one place: the path ``place``, or every match of the glob ``pattern`` (in
        which any directory taken from the environment is escaped) that ``place`` shows.
        A relative place (from a relative ``HOME``) is skipped: it would depend on the cwd."""
        if not os.path.isabs(place):
            skip = {"source": str(source), "entry": printable(place), "reason": "relative"}
            if skip not in self.skipped:
                self.skipped.append(skip)
            return
        shown = {"source": str(source), "path": printable(place)}
        if shown in self.searched:
            return
        self.searched.append(shown)
        if pattern is not None:
            matches = sorted(glob.glob(pattern), key=_natural_key, reverse=True)
        else:
            matches = [place] if os.path.lexists(place) else []
        for match in matches:
            self.add(make_candidate(source, match))

    def add(self, candidate: Candidate) -> None:
        key: object = candidate.resolved or (candidate.source, candidate.path)
        if key not in self.index:
            self.index[key] = len(self.candidates)
            self.candidates.append(candidate)
            return
        position = self.index[key]
        first = self.candidates[position]
        place = (candidate.source, candidate.path)
        if place != (first.source, first.path) and place not in first.also_found_at:
            self.candidates[position] = Candidate(
                first.source,
                first.path,
                first.resolved,
                first.verdict,
                (*first.also_found_at, place),
            )

    def directory(self, source: Source, name: str, default: str) -> str | None:
        """A location variable's value (``default`` when unset or empty); None if relative."""
        value = os.environ.get(name) or default
        if os.path.isabs(value):
            return value
        self.skipped.append(
            {"source": str(source), "entry": f"{name}={printable(value)}", "reason": "relative"}
        )
        return None

    def harness(self) -> None:
        self.searched.append({"source": str(Source.HARNESS), "path": "ancestor processes"})
        found = _harness_candidate()
        if found is not None:
            self.add(found)

    def standalone(self) -> None:
        home = str(Path.home())
        install_dir = self.directory(Source.STANDALONE, "CODEX_INSTALL_DIR", f"{home}/.local/bin")
        if install_dir:
            self.look(Source.STANDALONE, os.path.join(install_dir, EXECUTABLE))
        codex_home = self.directory(Source.STANDALONE, "CODEX_HOME", f"{home}/.codex")
        if codex_home:
            current = os.path.join(codex_home, "packages", "standalone", "current")
            self.look(Source.STANDALONE, os.path.join(current, "bin", EXECUTABLE))
            self.look(Source.STANDALONE, os.path.join(current, EXECUTABLE))

    def path_entries(self) -> None:
        for entry in os.environ.get("PATH", "").split(os.pathsep):
            if not entry or not os.path.isabs(entry):
                reason = "relative" if entry else "empty"
                self.skipped.append(
                    {"source": str(Source.PATH), "entry": printable(entry), "reason": reason}
                )
                continue
            self.look(Source.PATH, os.path.join(entry, EXECUTABLE))

    def known_places(self) -> None:
        for place, pattern in self._known_places():
            self.look(Source.KNOWN, place, pattern=pattern)

    def _known_places(self) -> list[tuple[str, str | None]]:
        """npm/nvm/fnm/volta/pnpm/bun prefixes, Homebrew, VS Code-family extensions, apps:
        ``(place, glob pattern or None)``."""
        home = str(Path.home())
        darwin = platform.system() == "Darwin"
        data = self.directory(Source.KNOWN, "XDG_DATA_HOME", f"{home}/.local/share")
        places: list[tuple[str, str | None]] = []

        def literal(path: str) -> None:
            places.append((path, None))

        def wildcard(directory: str, rest: str) -> None:
            places.append((f"{directory}/{rest}", f"{glob.escape(directory)}/{rest}"))

        # npm reads its settings from npm_config_* variables in either case.
        npm_env = os.environ.get("npm_config_prefix") or os.environ.get("NPM_CONFIG_PREFIX")  # noqa: SIM112
        for prefix in (npm_env, _npmrc_prefix(home), f"{home}/.npm-global", "/usr/local"):
            if prefix:
                literal(f"{prefix}/bin/codex")
        if nvm := self.directory(Source.KNOWN, "NVM_DIR", f"{home}/.nvm"):
            wildcard(nvm, "versions/node/*/bin/codex")
        fnm_default = f"{home}/Library/Application Support/fnm" if darwin else f"{data}/fnm"
        fnm_dirs = (self.directory(Source.KNOWN, "FNM_DIR", fnm_default), f"{home}/.fnm")
        for fnm in dict.fromkeys(fnm_dirs):
            if fnm:
                wildcard(fnm, "node-versions/*/installation/bin/codex")
        if volta := self.directory(Source.KNOWN, "VOLTA_HOME", f"{home}/.volta"):
            literal(f"{volta}/tools/image/packages/@openai/codex/bin/codex")
        pnpm_default = f"{home}/Library/pnpm" if darwin else f"{data}/pnpm"
        if pnpm := self.directory(Source.KNOWN, "PNPM_HOME", pnpm_default):
            literal(f"{pnpm}/codex")
        if bun := self.directory(Source.KNOWN, "BUN_INSTALL", f"{home}/.bun"):
            literal(f"{bun}/bin/codex")
        if darwin:
            literal("/opt/homebrew/bin/codex")
            literal("/usr/local/bin/codex")
        else:
            literal("/home/linuxbrew/.linuxbrew/bin/codex")
            literal(f"{home}/.linuxbrew/bin/codex")
        for editor in (".vscode*", ".cursor*", ".windsurf*"):
            wildcard(home, f"{editor}/extensions/openai.chatgpt-*/bin/*/codex")
        if darwin:
            for apps in ("/Applications", f"{home}/Applications"):
                for app in ("Codex", "ChatGPT"):
                    literal(f"{apps}/{app}.app/Contents/Resources/codex")
        return places


def _natural_key(text: str) -> list[tuple[int, int | str]]:
    """Sort key that orders ``v10`` after ``v9`` (so newest versions come first reversed)."""
    return [(1, int(part)) if part.isdigit() else (0, part) for part in re.split(r"(\d+)", text)]


def _npmrc_prefix(home: str) -> str | None:
    """An absolute ``prefix=`` from ``~/.npmrc`` (where ``npm install -g`` puts bin/)."""
    try:
        with open_regular_file(os.path.join(home, ".npmrc")) as file:
            text = file.read(_NPMRC_LIMIT).decode("utf-8", "replace")
    except OSError:
        return None
    prefix = None
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == "prefix" and os.path.isabs(value.strip()):
            prefix = value.strip()
    return prefix


def _harness_candidate() -> Candidate | None:
    """The nearest ancestor process running the Codex CLI, as a candidate (psutil)."""
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
    """A candidate when ``process`` runs the Codex CLI: its executable is named ``codex``
    (or is a ``codex-<triple>`` inside an ``@openai/codex`` package), or it is an
    interpreter running, through a ``#!`` line, a script named ``codex`` or ``codex.js``
    (the npm Node shim, or a scripted stand-in); then ``cmdline[1]`` names that script.
    """
    import psutil

    try:
        exe = process.exe()
    except (psutil.AccessDenied, psutil.ZombieProcess):
        exe = ""
    exe = exe.removesuffix(" (deleted)")
    if _is_codex_exe(exe):
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
        argv = process.cmdline()
        script = argv[1] if len(argv) > 1 else ""
        if os.path.basename(script) not in (EXECUTABLE, "codex.js"):
            return None
        if not os.path.isabs(script):
            script = os.path.join(process.cwd(), script)
    except (psutil.AccessDenied, psutil.ZombieProcess):
        return None
    runs = interpreter(read_head(script))
    if runs is None or not os.path.basename(exe).startswith(runs):
        return None
    return make_candidate(Source.HARNESS, script)


def _is_codex_exe(exe: str) -> bool:
    name = os.path.basename(exe)
    return name == EXECUTABLE or (name.startswith("codex-") and "/@openai/codex" in exe)


def _replaced_on_disk(pid: int, exe: str) -> bool:
    """True when the file at ``exe`` is not the running image (Linux ``/proc``)."""
    try:
        running = os.stat(f"/proc/{pid}/exe")
    except OSError:
        return False
    try:
        on_disk = os.stat(exe)
    except OSError:
        return True
    return (running.st_dev, running.st_ino) != (on_disk.st_dev, on_disk.st_ino)
