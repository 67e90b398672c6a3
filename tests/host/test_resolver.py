"""The resolver and ``launcher-probe resolve``: publish or withhold, cached, invalidated on change.

Every resolve below runs as a real process against the fake codex, which counts its probes.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

from launcher_probe.contract import Reason
from launcher_probe.host.cache.memory import MEMORY
from launcher_probe.host.decision import Published, Withheld
from launcher_probe.host.discovery.order import discover
from launcher_probe.host.native.shims import host_target
from launcher_probe.host.resolver import ResolverConfig, resolve_launcher
from tests.conftest import ROOT, HostEnv, run_cli
from tests.fakes import FakeCodex, install_fake_codex

PYTHON_M = (sys.executable, "-m", "launcher_probe")
PYTHON_IMPORTTIME = (sys.executable, "-X", "importtime", "-m", "launcher_probe")


def resolve_json(env: HostEnv, *args: str) -> tuple[int, dict[str, Any]]:
    done = run_cli("resolve", "--json", *args, env=env.env)
    return done.returncode, json.loads(done.stdout)


def published(env: HostEnv, path: Path | str) -> dict[str, Any]:
    code, decision = resolve_json(env, "--codex", str(path))
    assert code == 0, decision
    assert decision["decision"] == "published"
    return decision


# --- the command's contract ------------------------------------------------


def test_published_prints_only_the_descriptor(host_env: HostEnv, fake_codex: FakeCodex) -> None:
    done = run_cli("resolve", "--codex", str(fake_codex.path), env=host_env.env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == json.dumps({"codexExecutable": str(fake_codex.path)}) + "\n"
    assert done.stderr == ""


def test_published_json(host_env: HostEnv, fake_codex: FakeCodex) -> None:
    first = published(host_env, fake_codex.path)
    second = published(host_env, fake_codex.path)
    assert set(first) == {
        "schema",
        "decision",
        "launcher",
        "source",
        "path",
        "resolved",
        "tried",
        "version",
        "from_cache",
        "probed_at",
        "fingerprint",
        "warnings",
        "via",
    }
    assert first["launcher"] == {"codexExecutable": str(fake_codex.path)}
    assert (first["schema"], first["resolved"], first["tried"]) == (1, str(fake_codex.path), [])
    assert (first["source"], first["version"], first["warnings"]) == ("explicit", "0.169.0", [])
    assert (first["from_cache"], second["from_cache"]) == (False, True)
    assert second["probed_at"] == first["probed_at"]
    assert second["fingerprint"] == first["fingerprint"]
    assert fake_codex.probe_count() == 1


def test_withheld_exit_3_one_stderr_line(host_env: HostEnv, fake_codex: FakeCodex) -> None:
    fake_codex.set_fault("wrong_version")
    done = run_cli("resolve", "--codex", str(fake_codex.path), env=host_env.env)
    assert done.returncode == 3
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1
    assert "not_codex" in done.stderr

    code, decision = resolve_json(host_env, "--codex", str(fake_codex.path))
    assert code == 3
    assert set(decision) == {
        *("schema", "decision", "reason", "detail", "tried", "searched", "warnings", "via")
    }
    assert (decision["decision"], decision["reason"]) == ("withheld", "not_codex")
    (tried,) = decision["tried"]
    assert set(tried) == {"source", "path", "resolved", "reason", "detail"}
    assert (tried["source"], tried["path"], tried["reason"]) == (
        "explicit",
        str(fake_codex.path),
        "not_codex",
    )
    assert "cached verdict" in tried["detail"]
    assert fake_codex.probe_count() == 1  # the permanent failure was cached


def test_path_rule_failure_is_withheld_without_probing(
    host_env: HostEnv, fake_codex: FakeCodex
) -> None:
    fake_codex.path.chmod(0o757)  # writable by others
    code, decision = resolve_json(host_env, "--codex", str(fake_codex.path))
    assert (code, decision["reason"]) == (3, "unsafe_permissions")
    assert decision["detail"].count(str(fake_codex.path)) == 1  # named once, not repeated
    assert fake_codex.probe_count() == 0


def test_a_resolve_that_launched_a_supervisor_but_did_not_probe_leaves_no_process(
    host_env: HostEnv, fake_codex: FakeCodex
) -> None:
    """The process that claims a missed entry (its path passes the path rules) launches the
    probe's supervisor before its slow imports; when following the file then withholds it
    (a script of no known format), no probe runs, and the supervisor is ended and reaped
    all the same."""
    script = fake_codex.path.with_name("codex-script")
    script.write_text("#!/bin/sh\nexec echo codex-cli 0.169.0\n")
    script.chmod(0o755)
    decision = resolve_launcher(str(script))
    assert isinstance(decision, Withheld) and decision.reason is Reason.UNRECOGNISED_SCRIPT
    assert fake_codex.probe_count() == 0
    assert psutil.Process().children() == []


def test_no_candidate_at_all_is_not_found(host_env: HostEnv) -> None:
    assert discover().candidates == ()  # precondition: this host has no Codex in its places
    decision = resolve_launcher()
    assert isinstance(decision, Withheld)
    assert decision.reason is Reason.NOT_FOUND
    assert "PATH" in decision.detail and "standalone" in decision.detail
    assert decision.tried == ()
    done = run_cli("resolve", env=host_env.env)
    assert done.returncode == 3 and "not_found" in done.stderr


def test_every_candidate_tried_is_listed(host_env: HostEnv, tmp_path: Path) -> None:
    """Two PATH candidates: a failing one first, then a good one, which is published."""
    bad = install_fake_codex(_mkdir(tmp_path / "bad"))
    good = install_fake_codex(_mkdir(tmp_path / "good"))
    bad.set_fault("no_sandbox")
    env = {**host_env.env, "PATH": f"{bad.path.parent}:{good.path.parent}:/usr/bin:/bin"}
    done = run_cli("resolve", "--json", env=env)
    assert done.returncode == 0, done.stdout
    assert json.loads(done.stdout)["launcher"] == {"codexExecutable": str(good.path)}

    good.set_fault("state_rejected")
    os.utime(good.path)  # a changed binary: its verdict is probed again
    done = run_cli("resolve", "--json", env=env)
    decision = json.loads(done.stdout)
    assert done.returncode == 3
    assert decision["reason"] == "sandbox_unsupported"  # the first candidate decides
    assert [(t["path"], t["reason"]) for t in decision["tried"]] == [
        (str(bad.path), "sandbox_unsupported"),
        (str(good.path), "sandbox_unavailable"),
    ]
    assert (bad.probe_count(), good.probe_count()) == (1, 2)


def _mkdir(path: Path) -> Path:
    path.mkdir(mode=0o755)
    path.chmod(0o755)
    return path


# --- the cache in front of the probe ----------------------------------------


def test_second_resolve_probes_zero_times(host_env: HostEnv, fake_codex: FakeCodex) -> None:
    published(host_env, fake_codex.path)
    assert fake_codex.probe_count() == 1
    for _ in range(3):
        assert published(host_env, fake_codex.path)["from_cache"] is True
    assert fake_codex.probe_count() == 1


def _touch(fake: FakeCodex) -> None:
    st = fake.path.stat()
    os.utime(fake.path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def _replace(fake: FakeCodex) -> None:
    before = fake.path.stat().st_ino
    install_fake_codex(fake.path.parent)
    assert fake.path.stat().st_ino != before


def _rewrite_keeping_mtime(fake: FakeCodex) -> None:
    st = fake.path.stat()
    data = fake.path.read_bytes()
    index = data.index(b"fake codex: cannot run")  # a message in the native launcher
    with open(fake.path, "r+b") as stream:
        stream.seek(index)
        stream.write(b"fake Codex: cannot run")
    os.utime(fake.path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = fake.path.stat()
    assert (after.st_mtime_ns, after.st_size, after.st_ino) == (
        st.st_mtime_ns,
        st.st_size,
        st.st_ino,
    )


def _chmod(fake: FakeCodex) -> None:
    fake.path.chmod(0o750)


@pytest.mark.parametrize(
    "change",
    [_touch, _replace, _rewrite_keeping_mtime, _chmod],
    ids=["touch", "replace-new-inode", "content-with-mtime-restored", "chmod"],
)
def test_a_changed_binary_is_probed_exactly_once_more(
    host_env: HostEnv, fake_codex: FakeCodex, change: Callable[[FakeCodex], None]
) -> None:
    published(host_env, fake_codex.path)
    published(host_env, fake_codex.path)
    assert fake_codex.probe_count() == 1
    change(fake_codex)
    assert published(host_env, fake_codex.path)["from_cache"] is False
    assert fake_codex.probe_count() == 2
    assert published(host_env, fake_codex.path)["from_cache"] is True
    assert fake_codex.probe_count() == 2


def test_a_retargeted_symlink_is_probed_exactly_once(host_env: HostEnv, tmp_path: Path) -> None:
    first = install_fake_codex(_mkdir(tmp_path / "one"))
    second = install_fake_codex(_mkdir(tmp_path / "two"))
    link = _mkdir(tmp_path / "bin") / "codex"
    os.symlink(first.path, link)
    assert published(host_env, link)["launcher"] == {"codexExecutable": str(first.path)}
    published(host_env, link)
    assert (first.probe_count(), second.probe_count()) == (1, 0)

    temporary = link.with_name(".codex.new")
    os.symlink(second.path, temporary)
    os.replace(temporary, link)

    decision = published(host_env, link)
    assert decision["launcher"] == {"codexExecutable": str(second.path)}
    assert decision["from_cache"] is False
    assert published(host_env, link)["from_cache"] is True
    assert (first.probe_count(), second.probe_count()) == (1, 1)


def test_refresh_probes_again_and_no_cache_never_touches_it(
    host_env: HostEnv, fake_codex: FakeCodex
) -> None:
    published(host_env, fake_codex.path)
    code, decision = resolve_json(host_env, "--codex", str(fake_codex.path), "--refresh")
    assert (code, decision["from_cache"]) == (0, False)
    assert fake_codex.probe_count() == 2
    code, decision = resolve_json(host_env, "--codex", str(fake_codex.path), "--no-cache")
    assert (code, decision["from_cache"]) == (0, False)
    assert fake_codex.probe_count() == 3
    assert published(host_env, fake_codex.path)["from_cache"] is True
    assert fake_codex.probe_count() == 3


def test_a_deadline_shorter_than_the_default_that_passes_is_not_cached(
    host_env: HostEnv, fake_codex: FakeCodex
) -> None:
    """A caller's ``--timeout`` below the default is its own: the ``probe_timeout`` it gets
    is not stored for every other process (with the default, it is: a binary that hangs is
    not probed again by every resolve for a transient failure's lifetime)."""
    fake_codex.set_fault("slow_start", seconds=60, gate=str(fake_codex.path.parent / "gate"))
    code, decision = resolve_json(host_env, "--codex", str(fake_codex.path), "--timeout", "0.5")
    assert (code, decision["reason"]) == (3, "probe_timeout")
    fake_codex.set_fault(None)
    assert published(host_env, fake_codex.path)["from_cache"] is False  # probed again

    fake_codex.set_fault("hang")
    code, decision = resolve_json(host_env, "--codex", str(fake_codex.path), "--refresh")
    assert (code, decision["reason"]) == (3, "probe_timeout")
    fake_codex.set_fault(None)
    code, decision = resolve_json(host_env, "--codex", str(fake_codex.path))
    assert (code, decision["reason"]) == (3, "probe_timeout")  # the stored verdict answers
    assert "cached verdict" in decision["detail"]


# --- a binary that changes while it is verified ------------------------------


def test_binary_swapped_during_its_probe_is_not_published_on_that_probe(
    host_env: HostEnv, fake_codex: FakeCodex
) -> None:
    """The fake replaces itself during the first probe: that verdict is discarded, and the
    new file is probed and published under its own fingerprint."""
    fake_codex.set_fault("replace_self", times=1)
    original = fake_codex.path.stat().st_ino
    decision = published(host_env, fake_codex.path)
    assert fake_codex.replacements() == 1
    assert fake_codex.probe_count() == 2
    now = fake_codex.path.stat()
    assert now.st_ino != original
    assert decision["fingerprint"][-1]["ino"] == now.st_ino
    assert decision["fingerprint"][-1]["ctime_ns"] == now.st_ctime_ns
    assert published(host_env, fake_codex.path)["from_cache"] is True
    assert fake_codex.probe_count() == 2


def test_binary_swapped_during_both_probes_is_withheld(
    host_env: HostEnv, fake_codex: FakeCodex
) -> None:
    fake_codex.set_fault("replace_self", times=2)
    code, decision = resolve_json(host_env, "--codex", str(fake_codex.path))
    assert (code, decision["decision"], decision["reason"]) == (3, "withheld", "binary_changed")
    assert fake_codex.replacements() == 2
    assert fake_codex.probe_count() == 2
    listing = json.loads(run_cli("cache", "show", "--json", env=host_env.env).stdout)
    assert listing["records"] == []  # neither verdict was cached
    assert published(host_env, fake_codex.path)["from_cache"] is False
    assert fake_codex.probe_count() == 3


# --- in process --------------------------------------------------------------


def test_in_process_decision_types(host_env: HostEnv, fake_codex: FakeCodex) -> None:
    first = resolve_launcher(str(fake_codex.path))
    second = resolve_launcher(str(fake_codex.path))  # served by the memory front
    assert isinstance(first, Published) and isinstance(second, Published)
    assert (first.from_cache, second.from_cache) == (False, True)
    assert second.fingerprint == first.fingerprint
    assert second.fingerprint.still_matches()
    assert fake_codex.probe_count() == 1
    _touch(fake_codex)
    assert not second.fingerprint.still_matches()
    third = resolve_launcher(str(fake_codex.path))  # the memory hit no longer matches
    assert isinstance(third, Published) and third.from_cache is False
    assert fake_codex.probe_count() == 2


class TouchingClock:
    """A wall clock that, once armed, touches ``path`` on its ``at``-th call: inside the
    cache lookup, after the file was fingerprinted and before the hit is published."""

    def __init__(self, path: Path, at: int) -> None:
        self.path, self.at, self.calls = path, at, -1

    def arm(self) -> None:
        self.calls = 0

    def __call__(self) -> float:
        if self.calls >= 0:
            self.calls += 1
            if self.calls == self.at:
                st = self.path.stat()
                os.utime(self.path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
        return time.time()


def test_a_cache_hit_is_rechecked_against_the_file_when_published(
    host_env: HostEnv, fake_codex: FakeCodex
) -> None:
    """The binary changes between reading its record from disk and the publish: the stale
    verdict is not published; the changed file is probed and published instead."""
    clock = TouchingClock(fake_codex.path, at=1)  # 1: the record's freshness, read first
    config = ResolverConfig(clock=clock)
    assert isinstance(resolve_launcher(str(fake_codex.path), config=config), Published)
    MEMORY.forget()  # as in a fresh process: the verdict comes from the disk
    clock.arm()
    decision = resolve_launcher(str(fake_codex.path), config=config)
    assert clock.calls > 1  # the touch happened
    assert isinstance(decision, Published)
    assert decision.from_cache is False
    assert decision.fingerprint.still_matches()
    assert fake_codex.probe_count() == 2


# --- the warm path stays light ----------------------------------------------


def imported_by_resolve(host_env: HostEnv, codex: Path, code: int = 0) -> list[str]:
    """The modules a fresh ``resolve --codex CODEX`` imports (``-X importtime``); it must
    exit ``code``."""
    done = subprocess.run(
        [*PYTHON_IMPORTTIME, "resolve", "--codex", str(codex)],
        env=host_env.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == code, done.stderr
    return re.findall(r"^import time:.*\|\s*(\S+)$", done.stderr, re.MULTILINE)


def test_warm_resolve_imports_neither_psutil_nor_filelock(
    host_env: HostEnv, fake_codex: FakeCodex
) -> None:
    published(host_env, fake_codex.path)
    imported = imported_by_resolve(host_env, fake_codex.path)
    assert "launcher_probe.host.resolver" in imported  # the measurement saw the resolver
    assert [name for name in imported if name.split(".")[0] in {"psutil", "filelock"}] == []
    assert fake_codex.probe_count() == 1


def test_a_failed_verdict_on_disk_answers_without_starting_a_supervisor(
    host_env: HostEnv, fake_codex: FakeCodex
) -> None:
    """A fresh failed verdict on disk answers a resolve of the operator's path from the
    cache: no probe, so no probe supervisor is started (and waited for) either."""
    fake_codex.set_fault("no_sandbox")
    code, decision = resolve_json(host_env, "--codex", str(fake_codex.path))
    assert (code, decision["decision"]) == (3, "withheld")
    imported = imported_by_resolve(host_env, fake_codex.path, code=3)
    assert "launcher_probe.host.attempt" in imported  # the slow path answered, from the cache
    assert "launcher_probe.host.probe.supervisor_client" not in imported
    assert fake_codex.probe_count() == 1


def test_cold_resolve_of_a_named_binary_imports_no_socket_layer_nor_glob(
    host_env: HostEnv, fake_codex: FakeCodex
) -> None:
    """A probe needs neither ``socket``'s Python layer (the supervisor's channel is a
    ``_socket`` pair) nor ``glob`` (no glob place is looked at for a native binary)."""
    imported = imported_by_resolve(host_env, fake_codex.path)
    assert "launcher_probe.host.probe.supervisor_client" in imported  # it probed
    assert fake_codex.probe_count() == 1
    assert {"socket", "glob"} & set(imported) == set()


def test_discovery_and_native_resolution_import_no_dataclasses() -> None:
    """Their values are ``Value`` classes: ``dataclasses`` (and ``inspect`` with it) is
    left to what really needs it (``filelock``, on a miss only)."""
    done = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-c",
            "import launcher_probe.host.discovery.order, launcher_probe.host.native.follow",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    imported = re.findall(r"^import time:.*\|\s*(\S+)$", done.stderr, re.MULTILINE)
    assert "launcher_probe.host.native.follow" in imported
    assert {"dataclasses", "inspect"} & set(imported) == set()


# --- the real Codex CLI ------------------------------------------------------


@pytest.mark.real_codex
def test_real_codex_resolves_and_then_comes_from_the_cache(
    host_env: HostEnv, real_codex: Path, codex_version: str
) -> None:
    first = published(host_env, real_codex)
    assert first["launcher"] == {"codexExecutable": str(real_codex)}
    assert (first["version"], first["from_cache"]) == (codex_version, False)
    second = published(host_env, real_codex)
    assert second["from_cache"] is True
    assert second["probed_at"] == first["probed_at"]


@pytest.mark.real_codex
def test_real_codex_found_on_path_prints_its_descriptor_then_comes_from_the_cache(
    host_env: HostEnv, real_codex: Path
) -> None:
    """The fetched CLI on PATH, no --codex: a plain resolve prints the descriptor alone, and
    later resolves take the stored verdict (a new probe would store a new probed_at)."""
    env = {**host_env.env, "PATH": f"{real_codex.parent}:{host_env.env['PATH']}"}
    descriptor = json.dumps({"codexExecutable": str(real_codex)}) + "\n"
    first = run_cli("resolve", env=env)
    assert (first.returncode, first.stdout, first.stderr) == (0, descriptor, ""), first.stderr
    (entry,) = json.loads(run_cli("cache", "show", "--json", env=env).stdout)["records"]
    assert (entry["path"], entry["ok"], entry["state"]) == (str(real_codex), True, "fresh")
    second = run_cli("resolve", env=env)
    assert (second.returncode, second.stdout, second.stderr) == (0, descriptor, "")
    decision = json.loads(run_cli("resolve", "--json", env=env).stdout)
    assert (decision["source"], decision["from_cache"]) == ("path", True)
    assert decision["probed_at"] == entry["probed_at"]


@pytest.mark.real_codex
def test_real_codex_npm_shim_publishes_the_native_binary(
    host_env: HostEnv, real_codex: Path
) -> None:
    shim = next(
        parent / "codex" / "bin" / "codex.js"
        for parent in real_codex.parents
        if parent.name == "@openai"
    )
    decision = published(host_env, shim)
    assert decision["launcher"] == {"codexExecutable": str(real_codex)}
    assert decision["path"] == str(shim)
    assert decision["fingerprint"][0]["path"] == str(shim)
    assert decision["fingerprint"][-1]["path"] == str(real_codex)


# --- the path rules, re-applied to what is published -----------------------

NOBODY = pwd.getpwnam("nobody").pw_uid
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to nobody needs root")


class HeldProbe:
    """Stops the fake's sandbox step until :meth:`release`, and says when it got there.

    The fake appends each invocation's arguments to its ``calls`` side file before any
    fault acts; here that file is a FIFO, so each invocation blocks in ``open`` until the
    test reads it: the test knows which step has started. ``slow_start`` with a gate keeps
    the sandbox step waiting for the gate file. Invocations after the held one are read
    (and counted) by a thread until :meth:`close`.
    """

    def __init__(self, fake: FakeCodex, gate: Path) -> None:
        self.calls = fake.side_file("calls")
        os.mkfifo(self.calls)
        self.gate = gate
        fake.set_fault("slow_start", seconds=120, gate=str(gate), step="sandbox")
        self.later: list[list[str]] = []
        self.closed = threading.Event()
        self.reader = threading.Thread(target=self._read_later, daemon=True)

    def next_invocation(self) -> list[str]:
        with open(self.calls, "rb") as fifo:
            arguments: list[str] = json.loads(fifo.read())
            return arguments

    def release(self) -> None:
        self.reader.start()
        self.gate.touch()

    def _read_later(self) -> None:
        while True:
            arguments = self.next_invocation()
            if self.closed.is_set():
                return
            self.later.append(arguments)

    def close(self) -> None:
        """Stop the reader: it is blocked in ``open``, which a writer's open ends."""
        self.closed.set()
        fd = os.open(self.calls, os.O_WRONLY)
        os.write(fd, b"[]")
        os.close(fd)
        self.reader.join(timeout=60)


def _unsafe_in_place(fake: FakeCodex) -> None:
    os.chown(fake.path, NOBODY, -1)
    fake.path.chmod(0o777)


def _unsafe_by_rename(fake: FakeCodex) -> None:
    replacement = fake.path.with_name(".codex.swap")
    shutil.copyfile(fake.path, replacement)
    os.chown(replacement, NOBODY, -1)
    replacement.chmod(0o777)
    os.replace(replacement, fake.path)


@as_root
@pytest.mark.parametrize(
    "change", [_unsafe_in_place, _unsafe_by_rename], ids=["chown-chmod", "rename-replace"]
)
def test_a_binary_made_unsafe_while_probed_is_never_published(
    host_env: HostEnv, fake_codex: FakeCodex, tmp_path: Path, change: Callable[[FakeCodex], None]
) -> None:
    held = HeldProbe(fake_codex, tmp_path / "gate")
    child = subprocess.Popen(
        [*PYTHON_M, "resolve", "--json", "--codex", str(fake_codex.path)],
        env=host_env.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert held.next_invocation() == ["--version"]
        assert held.next_invocation()[0] == "sandbox"  # the probe's sandbox step has begun
        change(fake_codex)
        held.release()
        out, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        held.close()
    decision = json.loads(out)
    assert (child.returncode, decision["decision"]) == (3, "withheld"), err
    assert decision["reason"] == "unsafe_permissions"
    assert str(fake_codex.path) in decision["detail"]
    assert held.later == []  # the unsafe file was judged, not probed again
    done = run_cli("resolve", "--json", "--codex", str(fake_codex.path), env=host_env.env)
    assert (done.returncode, json.loads(done.stdout)["reason"]) == (3, "unsafe_permissions")


def _npm_layout(root: Path) -> tuple[Path, FakeCodex]:
    """``root/pkg/bin/codex.js`` (a node shim) and its package-local native binary (the
    fake), as the npm package lays them out."""
    target = host_target()
    assert target is not None
    native_dir = root / "pkg" / "vendor" / target.triple / "bin"
    for directory in (root / "pkg" / "bin", native_dir):
        directory.mkdir(parents=True)
    for directory in (root, root / "pkg", root / "pkg" / "bin", *native_dir.parents[:3]):
        directory.chmod(0o755)
    native_dir.chmod(0o755)
    shim = root / "pkg" / "bin" / "codex.js"
    shim.write_text("#!/usr/bin/env node\nrequire('../vendor/codex');\n")
    shim.chmod(0o755)
    return shim, install_fake_codex(native_dir)


def _chmod_0777(directory: Path) -> None:
    directory.chmod(0o777)


def _chown_nobody(directory: Path) -> None:
    os.chown(directory, NOBODY, -1)


def _chmod_0750(directory: Path) -> None:
    directory.chmod(0o750)


@as_root
@pytest.mark.parametrize("where", ["binary", "native-behind-shim"])
@pytest.mark.parametrize(
    "change", [_chmod_0777, _chown_nobody, _chmod_0750], ids=["0777", "nobody", "0750"]
)
def test_a_directory_changed_between_lookups_is_judged_again(
    host_env: HostEnv, tmp_path: Path, where: str, change: Callable[[Path], None]
) -> None:
    """In process (the memory front) and in a fresh process (the disk record): the cached
    verdict is not used once a directory on the chain changed owner or mode; the new
    state is judged (withheld when unsafe, probed again when still safe)."""
    if where == "binary":
        fake = install_fake_codex(_mkdir(tmp_path / "bin"))
        path, directory = fake.path, fake.path.parent
    else:
        path, fake = _npm_layout(tmp_path / "npm")
        directory = fake.path.parent.parent  # vendor/<triple>: on the native's chain only
    first = resolve_launcher(str(path))
    assert isinstance(first, Published) and first.descriptor.codex_executable == str(fake.path)
    second = resolve_launcher(str(path))
    assert isinstance(second, Published) and second.from_cache is True
    record = run_cli("resolve", "--json", "--codex", str(path), env=host_env.env)
    assert json.loads(record.stdout)["from_cache"] is True

    change(directory)
    assert not second.fingerprint.still_matches()
    in_process = resolve_launcher(str(path))
    fresh_process = json.loads(
        run_cli("resolve", "--json", "--codex", str(path), env=host_env.env).stdout
    )
    if change is _chmod_0750:  # still safe: judged and probed again, then cached again
        assert isinstance(in_process, Published) and in_process.from_cache is False
        assert fresh_process["from_cache"] is True
        assert fake.probe_count() == 2
    else:
        assert isinstance(in_process, Withheld)
        assert in_process.reason is Reason.UNSAFE_PERMISSIONS
        assert str(directory) in in_process.detail
        assert fresh_process["reason"] == "unsafe_permissions"
        assert fake.probe_count() == 1


def test_a_symlink_retargeted_while_its_binary_is_probed_publishes_where_it_leads_now(
    host_env: HostEnv, tmp_path: Path
) -> None:
    """The retry after a change resolves the path again: the binary the symlink leads to
    now is verified and published, never the one it led to when it was found."""
    from tests.processes import wait_until

    before, after = (install_fake_codex(_private(tmp_path / name)) for name in ("a", "b"))
    link, gate = tmp_path / "link", tmp_path / "gate"
    link.symlink_to(before.path)
    before.set_fault("slow_start", seconds=60, gate=str(gate))
    resolving = subprocess.Popen(
        [sys.executable, "-m", "launcher_probe", "resolve", "--json", "--codex", str(link)],
        env=host_env.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(lambda: before.probe_count() == 1)
        retargeted = tmp_path / "link.new"
        retargeted.symlink_to(after.path)
        os.replace(retargeted, link)
        gate.touch()
        out, err = resolving.communicate(timeout=120)
    finally:
        resolving.kill()
        resolving.wait()
    assert resolving.returncode == 0, err
    assert json.loads(out)["launcher"] == {"codexExecutable": str(after.path)}
    assert (before.probe_count(), after.probe_count()) == (1, 1)


def _private(directory: Path) -> Path:
    directory.mkdir(mode=0o755)
    directory.chmod(0o755)
    return directory


def test_a_shim_that_leads_elsewhere_after_discovery_publishes_where_it_leads_now(
    host_env: HostEnv, tmp_path: Path
) -> None:
    """Between discovery's resolution of an npm shim and its attempt, a nested platform
    package appears, which Node's lookup reaches first: the attempt resolves the shim
    again after its walk, so it publishes that package's binary, never the one found."""
    from launcher_probe.contract import Source
    from launcher_probe.host.attempt import Attempt
    from launcher_probe.host.discovery.candidate import make_candidate
    from tests.host.cache.test_discovery_memo_shims import _nested_package_appears, npm_global

    layout = npm_global(tmp_path / "npm-prefix", sibling=True)
    shim = str(layout.bin_dir / "codex")
    found = make_candidate(Source.PATH, shim)
    assert found.resolved == str(layout.fake.path)
    _nested_package_appears(layout, tmp_path)
    leads_to = make_candidate(Source.PATH, shim).resolved
    assert leads_to != found.resolved

    outcome = Attempt(
        found, None, refresh=False, timeout=10.0, config=ResolverConfig(), warnings=[]
    ).decide()

    assert isinstance(outcome, Published), outcome
    assert outcome.descriptor.codex_executable == leads_to
