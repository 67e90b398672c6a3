"""The discovery memo: what decided a plain ``resolve`` (no operator path), replayed with
stats before answering from the verdict, so a warm one needs no discovery.

Discovery's answer is a function of its inputs: the environment variables it reads
(``VARIABLES``), the user, the operator's config file, the shell profiles and ``~/.npmrc``
it reads, the harness ancestry, and, place by place in order, whether a file is there, or
what a glob place matches. A memo is written after a full discovery that published its
*first* candidate: then every place searched before it was absent, and every glob place
before it matched nothing; and after one that found no candidate at all (``not_found``):
then every place searched was absent and every glob place matched nothing, and the memo
keeps the withheld answer's detail and places searched. It records those inputs: the
variables' values (the memo's file name is their digest, so each environment has its own),
the effective uid and its name, the config file's walk (or that it is absent), the home
directory as discovery takes it (``paths.rules.home_directory``) and the identity of each
profile and ``~/.npmrc`` there (of the file a symlink leads to: what discovery reads), the
ancestors that could be the harness read from ``/proc`` (pid, start time, executable,
command line of each whose executable or command line names ``codex``: ``harness.py`` takes
no other, so the shell that started this process decides nothing) -- all of these read
*before* discovery, so that a change while it and the probe run is a difference, never
recorded as what it saw (``observed``) --, each earlier place, each glob place's pattern
and matches up to the chosen place (when a glob found it, it is that glob's newest match),
and the chosen source and path (none for ``not_found``). A glob is replayed by matching it
again with the function discovery uses (``native/newest.py``): the same matches, within the
cap, or a miss. When that path reaches its native binary through a shim, dispatcher or
wrapper, it also records the binary and the trace (``paths/trace.py``) of every path native
resolution looked at (``native/trail.py``: the shim, the ``package.json`` files, the
platform package's directories, the places tried before): a resolution that listed a
directory (a glob) is no memo; nor is a discovery below an ancestor running a script named
as Codex's, before any Codex executable, when that script is a file or symlink (judged on
its mode and ``#!`` line, which no replay compares; one absent or a directory is recorded
and compared). An ancestor whose executable cannot be read (it made itself undumpable, as
Codex does) and whose ``argv[0]`` is an absolute path named as a Codex executable counts as
one running that file (psutil takes it whenever one may run it): a memo only when it is the
place found. No memo either for a script named from a deleted working directory (psutil
takes the name again once one is made there), for a config file that platformdirs names
under a relative or empty ``HOME`` (from the password database's home, which no replay
compares then), or for one that cannot be looked at (not absent: the command refuses it). The
replay compares every one of them, replays the trace, then asks the record on disk
(``VerdictCache.published``: freshness, the walk replayed, symlinks alone or that binary),
or, for ``not_found``, answers it withheld again (with no probe, no record is needed); any
difference, or anything it cannot read, is a miss: full discovery, as without a memo.
Processes of one environment that miss together run one discovery: the first claims the
memo's lock file, the others wait for it, then replay the memo it wrote (``wait_turn``,
``herd.py``). A memo file is distrusted on read like a record, removed by ``cache clear``,
and by a sweep once it was not written for a day (``store.STALE_MEMO_SECONDS``).
"""

from __future__ import annotations

import os
import stat

from launcher_probe.contract import Reason, Source
from launcher_probe.host.cache.location import CacheUnavailable, sha256_hex
from launcher_probe.host.cache.store import (
    MEMO_SUFFIX,
    TEMPORARY_PREFIX,
    TEMPORARY_SUFFIX,
    memo_lock_file,
)
from launcher_probe.host.decision import Withheld
from launcher_probe.host.paths.fingerprint import Fingerprint
from launcher_probe.host.paths.rules import home_directory, user_name
from launcher_probe.host.paths.trace import Trace
from launcher_probe.json_core import dumps, loads
from launcher_probe.json_output import printable

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from launcher_probe.host.cache.herd import Claim
    from launcher_probe.host.cache.policy import VerdictCache
    from launcher_probe.host.decision import Decision
    from launcher_probe.host.discovery.candidate import Candidate
    from launcher_probe.host.discovery.order import Discovery

#: Every environment variable discovery reads (``test_discovery_memo.py`` checks the list).
VARIABLES = (
    "LAUNCHER_PROBE_CODEX",
    "PATH",
    "HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "CODEX_INSTALL_DIR",
    "CODEX_HOME",
    "npm_config_prefix",
    "NPM_CONFIG_PREFIX",
    "NVM_DIR",
    "FNM_DIR",
    "VOLTA_HOME",
    "PNPM_HOME",
    "ASDF_DATA_DIR",
    "MISE_DATA_DIR",
    "VP_HOME",
    "BUN_INSTALL",
    "HOMEBREW_PREFIX",
)
#: The sources of a memo's place: discovery's own, never the operator's path.
_MEMO_SOURCES = frozenset(Source) - {Source.EXPLICIT, Source.ENV}
#: Files under HOME whose contents add places (shell profiles) or name one (``.npmrc``).
HOME_FILES = (".zshrc", ".bashrc", ".zprofile", ".bash_profile", ".profile", ".npmrc")
#: Raised whenever what a memo is written for changes, so that an older one is a miss.
MEMO_VERSION = 8
MAX_MEMO_BYTES = 1 << 18
#: Ancestors read at most (a deeper tree is no memo).
MAX_ANCESTORS = 64
#: What the executable or the command line of every process ``harness.py`` takes holds
#: (``codex``, ``codex-<triple>``, a script ``codex`` or ``codex.js``): its candidates'
#: ``EXECUTABLE``, kept here so that the replay imports no discovery.
HARNESS_MARK = "codex"
#: The most of an ancestor's command line read.
_COMMAND_READ = 1 << 16


def _plain(text: str | None) -> bool:
    """True unless ``text`` holds what ``printable`` escapes (searched places are listed
    escaped: such a place could not be looked at again by its name)."""
    return text is None or printable(text) == text


def _environment() -> dict[str, str | None]:
    return {name: os.environ.get(name) for name in VARIABLES}


def memo_file(cache: VerdictCache) -> str:
    """The memo for this environment and user, in this host's cache directory."""
    key = dumps([_environment(), os.geteuid()], sort_keys=True)
    name = sha256_hex(key.encode("utf-8", "surrogatepass"))
    return os.path.join(cache.directory, f"discovery-{name}{MEMO_SUFFIX}")


def _identity(path: str, *, follow: bool = False, strict: bool = False) -> list[int] | None:
    """What changes when the file at ``path`` (with ``follow``, the file it leads to through
    symlinks, which is what a reader reads) is replaced or written: device, inode, mode,
    size, mtime and ctime; None when nothing is there, or (unless ``strict``: then an
    OSError) when it cannot be looked at."""
    try:
        st = os.stat(path, follow_symlinks=follow)
    except FileNotFoundError:
        return None
    except OSError:
        if strict:
            raise
        return None
    return [st.st_dev, st.st_ino, st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def ancestry() -> list[list[Any]] | None:
    """Each ancestor process that could be the harness (its executable or command line
    holds ``HARNESS_MARK``), parent first: ``[pid, start time, executable or None, command
    line as hex]``, from ``/proc`` (no psutil); None when the ancestors cannot be read."""
    found: list[list[Any]] = []
    pid = os.getppid()
    for _ in range(MAX_ANCESTORS):
        if pid <= 0:
            break
        try:
            with open(f"/proc/{pid}/stat", "rb") as file:
                fields = file.read().rpartition(b")")[2].split()
            with open(f"/proc/{pid}/cmdline", "rb") as file:
                command = file.read(_COMMAND_READ)
        except OSError:
            return None
        try:
            exe: str | None = os.readlink(f"/proc/{pid}/exe")
        except OSError:
            exe = None
        marked = HARNESS_MARK.encode() in command or (exe is not None and HARNESS_MARK in exe)
        if marked or len(command) == _COMMAND_READ:  # a command line cut short may hold it
            found.append([pid, int(fields[19]), exe, command.hex()])
        pid = int(fields[1])
    return found if pid <= 0 else None


def _inputs(config: str) -> dict[str, Any]:
    """The inputs read now that do not depend on the places: the home directory (the
    password database's when HOME is unset) and its files (read through symlinks, as
    discovery reads them), the ancestry, the config file, the user's name (a place).
    OSError when the config file cannot be looked at: only one absent is no config file
    (``configured_codex`` refuses any other)."""
    home = home_directory()
    absolute = os.path.isabs(home)
    return {
        "home": home,
        "home_files": [
            _identity(os.path.join(home, name), follow=True) if absolute else None
            for name in HOME_FILES
        ],
        "ancestry": ancestry(),
        "config": _identity(config, strict=True),
        "user": user_name(),
    }


def observed() -> dict[str, Any] | None:
    """What a memo records of the inputs that do not depend on the places, read *before*
    discovery reads them (so that whatever changes while discovery and the probe run is a
    difference at the next replay, never taken for what discovery saw); None when they
    cannot be memoised."""
    from launcher_probe.host.discovery.config_file import config_file, xdg_config_file

    config = xdg_config_file()
    if config is None:
        if "HOME" in os.environ:
            # Relative or empty: platformdirs may name the config file from the password
            # database's home, which nothing the memo compares says: no memo then.
            return None
        config = config_file()  # from the password database's home, the memo's "home"
    try:
        inputs = _inputs(config)
    except OSError:
        return None
    seen: dict[str, Any] = {
        "environment": _environment(),
        "euid": os.geteuid(),
        **inputs,
        "config_file": config,
        "config_walk": None,
    }
    if seen["ancestry"] is None or not all(map(_plain, seen["environment"].values())):
        return None
    if seen["config"] is not None:
        try:
            seen["config_walk"] = Fingerprint.of(config, config).record_json()
        except OSError:
            return None
    return seen


def record(
    cache: VerdictCache, found: Discovery, seen: dict[str, Any], nothing: Withheld | None = None
) -> None:
    """Write the memo of the full discovery ``found`` from what was ``observed`` before it,
    when its inputs can be memoised (see the module's docstring): its first candidate was
    published, or it found none and ``nothing`` is the ``not_found`` answer; never fails."""
    chosen = found.candidates[0] if found.candidates else None
    place = None if chosen is None else {"source": str(chosen.source), "path": chosen.path}
    earlier = _searched_before(found, place)
    scripts = _harness_scripts(seen["ancestry"], place)
    if earlier is None or scripts is None:
        return
    absent, globs = earlier
    if any(os.path.lexists(path) for path in absent):
        return
    if chosen is None:
        assert nothing is not None
        withheld = {"detail": nothing.detail, "searched": list(nothing.searched)}
        outcome: dict[str, Any] = {"chosen": None, "native": None, "withheld": withheld}
    else:
        native = _behind(chosen)
        if native is None:
            return
        outcome = {"chosen": place, "native": native}
    memo = {"version": MEMO_VERSION, **seen, "scripts": scripts, "absent": absent}
    memo.update(globs=globs, **outcome)
    _write(cache, memo)
    if cache.disk.sweep_due():  # each new environment's memo is one more file, as a store's
        cache.disk.sweep()


def _harness_scripts(ancestors: list[list[Any]], place: dict[str, str] | None) -> list[Any] | None:
    """What the harness source's answer rests on besides the ancestors' executables and
    command lines (which the replay compares), or None when that is what no replay
    compares. For the operator's config file no ancestor is asked: nothing. Else, nearest
    first, up to the one that runs a Codex executable (it is the harness, so it must be
    the place found): each that runs a script named as Codex's, as ``[pid, its cwd when
    the name is relative, the name, the identity]`` of that script when it is absent or a
    directory (never the harness while it stays so: an editor opened on a clone named
    ``codex``). A file or symlink there is judged on its mode, the directories to it and
    its ``#!`` line: None then (under Codex the nearest is its native binary). One whose
    executable is unreadable and whose ``argv[0]`` names a Codex executable by an
    absolute path is taken for one (psutil takes that file when one may run it) that
    must be the place found. With no ``place`` (nothing found), every ancestor is looked
    at so."""
    if place is not None and place["source"] == "config":
        return []
    from launcher_probe.host.discovery.harness import is_codex_executable, script_named

    scripts: list[Any] = []
    for pid, _start, exe, command in ancestors:
        running = (exe or "").removesuffix(" (deleted)")
        if is_codex_executable(running):
            return scripts if place == {"source": "harness", "path": running} else None
        line = bytes.fromhex(command)
        argv = line.split(b"\0")
        known = line.endswith(b"\0") or (len(line) >= _COMMAND_READ and len(argv) > 2)
        if not known or (len(argv) <= 2 and b" " in line):
            return None  # cut short, or a title set over it (psutil splits that at spaces)
        named = [os.fsdecode(arg) for arg in argv[:2]]
        if exe is None and os.path.isabs(named[0]) and is_codex_executable(named[0]):
            # psutil takes it for the unreadable executable once one may run it: then it
            # is the harness (its record's walk is replayed), else no replay compares it
            return scripts if place == {"source": "harness", "path": named[0]} else None
        script = script_named(named)
        if script is None:
            continue
        cwd = None if os.path.isabs(script) else _cwd(pid)
        if cwd is None and not os.path.isabs(script):
            return None
        if cwd is not None and cwd.endswith(" (deleted)"):
            return None  # psutil (so discovery) takes the name again once one is there
        identity = _identity(os.path.join(cwd or "/", script))  # as harness.py joins it
        if identity is not None and not stat.S_ISDIR(identity[2]):
            return None
        scripts.append([pid, cwd, script, identity])
    return scripts if place is None or place["source"] != "harness" else None


def _cwd(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return None


def _scripts_unchanged(scripts: Any) -> bool:
    """Whether each script ``_harness_scripts`` recorded is as it was (its ancestor's cwd
    too); TypeError or ValueError when ``scripts`` is no such list."""
    if not isinstance(scripts, list):
        raise TypeError("scripts")
    for pid, cwd, script, identity in scripts:
        if not isinstance(script, str) or not (cwd is None or isinstance(cwd, str)):
            raise TypeError("script")
        if cwd is not None and _cwd(pid) != cwd:
            return False
        if _identity(os.path.join(cwd or "/", script)) != identity:
            return False
    return True


def _searched_before(
    found: Discovery, place: dict[str, str] | None
) -> tuple[list[str], list[list[Any]]] | None:
    """What full discovery judged before it found ``place``, its first candidate (with no
    ``place``: every place it searched): the literal places searched before it (absent)
    and ``[pattern, matches]`` of each glob place up to it (``newest_matches`` now: none
    before it; ``place`` the newest match of its own, when found by one). None when that
    cannot be memoised: ``place`` is no place searched (relabelled: a standalone place
    holding another install), a glob place before it matches, its own glob's matches pass
    the cap, or a name ``printable`` escapes."""
    if place is not None and place["source"] == "harness":  # the ancestry, compared
        return [], []
    if place is not None and not _plain(place["path"]):
        return None
    from launcher_probe.host.native.newest import newest_matches

    patterns = {(source, path): pattern for source, path, pattern in found.patterns}
    absent: list[str] = []
    globs: list[list[Any]] = []
    for item in found.searched:
        if not item["path"]:
            continue
        if not _plain(item["path"]):
            return None
        pattern = patterns.get((item["source"], item["path"]))
        if pattern is None and item == place:
            return absent, globs
        if pattern is None:
            if os.path.isabs(item["path"]):
                absent.append(item["path"])
            elif item["source"] != "harness":
                return None
            continue
        matches, complete = newest_matches(pattern)
        globs.append([pattern, matches])
        if matches and place == {"source": item["source"], "path": matches[0]}:
            return (absent, globs) if complete else None
        if matches:
            return None
    return (absent, globs) if place is None else None


def _behind(chosen: Candidate) -> dict[str, Any] | None:
    """``{"native", "trace"}``: when ``chosen`` reaches its native binary through a shim,
    dispatcher or wrapper, that binary and the trace of every path its resolution looked
    at, taken between two resolutions that agree (discovery's, ``chosen.resolution``, and
    one more) and checked unchanged after the second; both None when it does by symlinks
    alone. None when no replay can prove it."""
    from launcher_probe.host.native.follow import resolve_native

    first = chosen.resolution
    if first is None or first.native is None or first.native != chosen.resolved:
        return None
    if first.shim is None:
        return {"native": None, "trace": None}
    if first.trail.listed:
        return None  # a glob can gain matches without any traced path changing
    try:
        trace = Trace.of(first.trail.looked)
    except ValueError:
        return None
    again = resolve_native(chosen.path)
    names = [component.path for component in trace.components]
    if (
        again.native != first.native
        or again.trail.looked != first.trail.looked
        or not all(map(_plain, names + [path for path, _ in trace.absent]))
        or not trace.still_matches()
    ):
        return None
    return {"native": first.native, "trace": trace.to_json()}


def _write(cache: VerdictCache, memo: dict[str, Any]) -> None:
    import contextlib  # with tempfile: writing a memo is the slow path's
    import tempfile

    try:
        cache.disk.check_directories(create=True)  # a not_found stored no record before it
        fd, temporary = tempfile.mkstemp(
            dir=cache.directory, prefix=TEMPORARY_PREFIX, suffix=TEMPORARY_SUFFIX
        )
    except (OSError, CacheUnavailable):
        return
    try:
        with os.fdopen(fd, "wb") as stream:
            stream.write(dumps(memo).encode())
        os.replace(temporary, memo_file(cache))
    except (OSError, ValueError):
        with contextlib.suppress(OSError):
            os.unlink(temporary)


def _read(file: str) -> dict[str, Any] | None:
    """The memo in ``file`` when it is a private regular file of ours, bounded, JSON."""
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if (
            not stat.S_ISREG(st.st_mode)
            or st.st_uid != os.geteuid()
            or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        ):
            return None
        data = os.read(fd, MAX_MEMO_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > MAX_MEMO_BYTES:
        return None
    try:
        memo = loads(data.decode("utf-8", "surrogatepass"))
    except (ValueError, RecursionError):
        return None
    return memo if isinstance(memo, dict) and memo.get("version") == MEMO_VERSION else None


def _globs_match(globs: Any) -> bool:
    """Whether each ``[pattern, matches]`` of ``globs`` matches the same now, within the cap
    (``newest_matches``, as discovery globs); TypeError or ValueError when ``globs`` is no
    such list. A pattern discovery could not have made (not absolute, or deep enough to
    exhaust ``glob``'s recursion: the memo was tampered with) is a miss."""
    if not isinstance(globs, list):
        raise TypeError("globs")
    if not globs:
        return True
    from launcher_probe.host.native.newest import newest_matches

    for pattern, matches in globs:
        if not isinstance(pattern, str) or not os.path.isabs(pattern):
            return False
        try:
            if newest_matches(pattern) != (matches, True):
                return False
        except RecursionError:
            return False
    return True


def replay(cache: VerdictCache) -> Decision | None:
    """The decision full discovery would make now, from this environment's memo and the
    record on disk (or ``not_found``, withheld), or None (a miss: discover in full)."""
    choice = replay_choice(cache)
    if choice is None or isinstance(choice, Withheld):
        return choice
    source, path, native = choice
    return cache.published(source, path, behind=native)


def wait_turn(cache: VerdictCache) -> Decision | Claim | None:
    """After :func:`replay` missed: this process's Claim on this environment's discovery
    (discover in full, then release it once the memo is written), or, once the process
    that holds it lets go, what the memo it left gives (None: discover in full, as without
    a wait). So a herd of plain resolves of one environment runs one discovery
    (``herd.py``); the entry lock still keeps the probe to one whatever the claim does."""
    return cache.wait_for(memo_lock_file(memo_file(cache)), lambda: replay(cache))


def _not_found(withheld: Any) -> Withheld:
    """The ``not_found`` answer a memo kept (``{"detail", "searched"}``); TypeError when it
    is no such value."""
    detail, searched = withheld["detail"], withheld["searched"]
    places = tuple({"source": place["source"], "path": place["path"]} for place in searched)
    if not isinstance(detail, str) or not all(
        isinstance(value, str) for place in places for value in place.values()
    ):
        raise TypeError("withheld")
    return Withheld(Reason.NOT_FOUND, detail, searched=places)


def replay_choice(cache: VerdictCache) -> tuple[str, str, str | None] | Withheld | None:
    """``(source, path, native)`` of the first candidate full discovery would find now
    (``native`` when it is behind a shim, dispatcher or wrapper, else None), or the
    ``not_found`` answer when it would find none, when this environment's memo says so and
    nothing it recorded changed; else None."""
    memo = _read(memo_file(cache))
    if memo is None:
        return None
    try:
        config, absent, chosen = memo["config_file"], memo["absent"], memo["chosen"]
        source, path = (None, None) if chosen is None else (chosen["source"], chosen["path"])
        if (
            memo["environment"] != _environment()
            or memo["euid"] != os.geteuid()
            or not isinstance(config, str)
            or (chosen is not None and not isinstance(source, str))
            or (chosen is not None and source not in _MEMO_SOURCES)
            or (chosen is not None and not isinstance(path, str))
            or not isinstance(absent, list)
            or not all(isinstance(place, str) for place in absent)
        ):
            return None
        now = _inputs(config)
        if any(now[key] != memo[key] for key in now):
            return None
        walk = memo["config_walk"]
        if walk is not None and not Fingerprint.from_record_json(walk).still_matches():
            return None
        if any(os.path.lexists(place) for place in absent):
            return None
        if not _scripts_unchanged(memo["scripts"]):
            return None
        if not _globs_match(memo["globs"]):
            return None
        if chosen is None:
            return _not_found(memo["withheld"])
        assert isinstance(source, str) and isinstance(path, str)
        native = memo["native"]["native"]
        if native is None:
            return source, path, None
        trace = Trace.from_json(memo["native"]["trace"])
        if not isinstance(native, str) or not trace.still_matches():
            return None
    except (KeyError, TypeError, ValueError, OverflowError, OSError):
        return None
    return source, path, native
