"""No process a probe starts outlives it; a signalled CLI cleans up; the caller is unchanged.

Real processes throughout: the fake codex's ``double_fork_daemon`` starts a daemon the
classic way (fork, setsid, fork, stdio and every descriptor closed), which no process group,
psutil tree walk or pipe search reaches; only the supervisor's subreaper does.
"""

from __future__ import annotations

import _thread
import contextlib
import ctypes
import os
import select
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from launcher_probe.contract import Reason
from launcher_probe.host.probe import supervisor_client
from launcher_probe.host.probe.bounded_run import run_bounded
from launcher_probe.host.probe.private_dir import ORPHAN_SECONDS, OWNER, PREFIX, sweep_abandoned
from launcher_probe.host.probe.steps import probe_below, probe_launcher
from launcher_probe.host.probe.supervisor_client import Supervisor
from tests.conftest import HostEnv
from tests.fakes import HANG_GUARD, FakeCodex, hanging_probe_cli
from tests.fakes.codex import DAEMON_MARKER
from tests.processes import dies_soon

PR_GET_PDEATHSIG = 2
PR_GET_CHILD_SUBREAPER = 37


def gone(pid: int) -> bool:
    """Whether ``pid`` is dead right now (exited, whether reaped or not)."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([pidfd], [], [], 0)[0])
    finally:
        os.close(pidfd)


def live_daemons(fake: FakeCodex) -> list[int]:
    """Every live process with the daemon marker and this fake's path in its argv."""
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        argv = process.info["cmdline"] or []
        if argv[-2:] == [DAEMON_MARKER, str(fake.path)] and (
            process.info["status"] != psutil.STATUS_ZOMBIE
        ):
            found.append(process.pid)
    return found


@pytest.fixture(autouse=True)
def _kill_stray_daemons(fake_codex: FakeCodex) -> Iterator[None]:
    """A failing test must not leave its daemons running for the rest of the run."""
    yield
    for pid in live_daemons(fake_codex):
        with contextlib.suppress(ProcessLookupError):  # it may end between list and kill
            os.kill(pid, signal.SIGKILL)


def test_a_double_forked_daemon_dies_with_a_successful_probe(fake_codex: FakeCodex) -> None:
    fake_codex.set_fault("double_fork_daemon")
    result = probe_launcher(str(fake_codex.path))
    assert result.ok, result.detail
    daemons = fake_codex.daemon_pids()
    assert len(daemons) == len(fake_codex.calls()) == 2, "one daemon per step"
    assert [c["ppid"] == os.getpid() for c in fake_codex.contexts()] == [False, False], (
        "the steps ran below the supervisor"
    )
    assert [pid for pid in daemons if not gone(pid)] == []
    assert live_daemons(fake_codex) == []


def test_a_double_forked_daemon_dies_with_a_timed_out_probe(fake_codex: FakeCodex) -> None:
    fake_codex.set_fault("double_fork_daemon", hang=True, step="sandbox")
    result = probe_launcher(str(fake_codex.path), timeout=4.0)
    assert (result.reason, result.steps[-1].exit_status) == (Reason.PROBE_TIMEOUT, None)
    (daemon,) = fake_codex.daemon_pids()
    assert gone(daemon)
    assert live_daemons(fake_codex) == []


def test_run_bounded_without_a_supervisor_brings_its_own(
    fake_codex: FakeCodex, tmp_path: Path
) -> None:
    """Any caller of ``run_bounded`` gets the guarantee, not only the probe."""
    fake_codex.set_fault("double_fork_daemon")
    env = {"PATH": "/usr/bin:/bin"}
    deadline = time.monotonic() + HANG_GUARD
    finished = run_bounded(
        [str(fake_codex.path), "--version"], env=env, cwd=str(tmp_path), deadline=deadline
    )
    assert (finished.exit_status, finished.stdout.data) == (0, b"codex-cli 0.169.0\n")
    (daemon,) = fake_codex.daemon_pids()
    assert gone(daemon)
    assert psutil.Process().children() == []


def test_a_supervisor_launched_early_serves_the_probe_and_is_ended_by_it(
    fake_codex: FakeCodex,
) -> None:
    """The resolver launches the supervisor before its slow imports; the probe's steps then
    run below that one process, and the probe ends it."""
    fake_codex.set_fault("double_fork_daemon")
    supervisor = Supervisor()
    supervisor.launch()
    (launched,) = psutil.Process().children()
    result = probe_below(supervisor, str(fake_codex.path))
    assert result.ok, result.detail
    assert {c["ppid"] for c in fake_codex.contexts()} != {os.getpid()}, "below the supervisor"
    assert gone(launched.pid) and psutil.Process().children() == []
    assert live_daemons(fake_codex) == []


def test_a_supervisor_closed_before_it_is_ready_leaves_nothing() -> None:
    """A supervisor launched for a probe that never came (a verdict found under the lock,
    a path rule failed, an error or a signal) is ended and reaped, ready or not."""
    supervisor = Supervisor()
    supervisor.launch()
    (launched,) = psutil.Process().children()
    supervisor.close()
    assert gone(launched.pid) and psutil.Process().children() == []


def test_a_launch_unwound_before_it_is_on_record_leaves_no_thread_behind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A signal whose handler raises just after the launching thread started, before the
    launch is on record (nobody will give that thread its go-ahead): the thread gives up
    after GO_AHEAD_WAIT and starts nothing, and the supervisor closes at once."""
    monkeypatch.setattr(supervisor_client, "GO_AHEAD_WAIT", 0.2)
    started: list[tuple[Any, ...]] = []

    def start_then_unwind(function: Callable[..., None], args: tuple[Any, ...]) -> int:
        started.append(args)
        thread = _thread.start_new_thread(function, args)
        raise KeyboardInterrupt(thread)  # what the CLI's handler does, at the next statement

    monkeypatch.setattr(supervisor_client, "start_new_thread", start_then_unwind)
    supervisor = Supervisor()
    with pytest.raises(KeyboardInterrupt):
        supervisor.launch()
    supervisor.close()
    ((launching,),) = started
    assert launching.ended.acquire(timeout=HANG_GUARD), "the launching thread is still waiting"
    assert psutil.Process().children() == []


def _process_state() -> dict[str, object]:
    """What a probe must not change in the process that calls it."""
    libc = ctypes.CDLL(None, use_errno=True)
    subreaper, deathsig = ctypes.c_int(-1), ctypes.c_int(-1)
    assert libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(subreaper), 0, 0, 0) == 0
    assert libc.prctl(PR_GET_PDEATHSIG, ctypes.byref(deathsig), 0, 0, 0) == 0
    handlers = {number: signal.getsignal(number) for number in signal.valid_signals()}
    with open("/proc/self/status") as status:
        masks = [line for line in status if line.startswith(("SigBlk", "SigIgn", "SigCgt"))]
    return {
        "subreaper": subreaper.value,
        "deathsig": deathsig.value,
        "handlers": handlers,
        "masks": masks,
        "session": (os.getsid(0), os.getpgrp()),
        "children": psutil.Process().children(),
    }


def test_the_python_api_leaves_the_calling_process_as_it_was(fake_codex: FakeCodex) -> None:
    """A long-lived multi-threaded host calls the probe from a worker thread: it is no
    subreaper afterwards, its signal handlers and masks are the same, no child is left."""
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()  # the host is multi-threaded (and the C library has set up for threads)
    before = _process_state()
    fake_codex.set_fault("double_fork_daemon")
    results = []
    worker = threading.Thread(target=lambda: results.append(probe_launcher(str(fake_codex.path))))
    worker.start()
    worker.join(HANG_GUARD)
    stop.set()
    other.join()
    assert [result.ok for result in results] == [True]
    assert _process_state() == before
    assert before["subreaper"] == 0
    assert live_daemons(fake_codex) == []


@pytest.mark.parametrize("executable", ["", "/bin/false", "missing", "mute"])
def test_without_a_supervisor_the_probe_still_runs_as_direct_children(
    fake_codex: FakeCodex, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, executable: str
) -> None:
    """An embedding host may have no usable ``sys.executable`` (none; not an interpreter;
    one that is gone; one that exits without a word): the steps then run as direct children
    (the best available), and the probe works as before."""
    if executable == "missing":
        executable = str(tmp_path / "gone" / "python3")
    elif executable == "mute":
        mute = tmp_path / "python3"
        mute.write_text("#!/bin/sh\nexit 1\n")
        mute.chmod(0o755)
        executable = str(mute)
    monkeypatch.setattr(sys, "executable", executable)
    result = probe_launcher(str(fake_codex.path))
    assert result.ok, result.detail
    contexts = fake_codex.contexts()
    assert [(c["ppid"], c["sid"]) for c in contexts] == [(os.getpid(), c["pid"]) for c in contexts]
    assert psutil.Process().children() == []


# --- a signalled command --------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "number"),
    [
        ("resolve", signal.SIGTERM),
        ("resolve", signal.SIGINT),
        ("resolve", signal.SIGHUP),
        ("probe", signal.SIGTERM),
    ],
)
def test_a_signalled_command_kills_its_probe_removes_its_directories_and_exits_128_plus_n(
    host_env: HostEnv, fake_codex: FakeCodex, tmp_path: Path, command: str, number: int
) -> None:
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = {**host_env.env, "TMPDIR": str(temporary)}
    args = ["--codex", str(fake_codex.path)] if command == "resolve" else [str(fake_codex.path)]
    argv = [command, *args, "--timeout", "600"]
    with hanging_probe_cli(fake_codex, argv, env, tmp_path / "ready.fifo") as cli:
        tree = psutil.Process(cli.pid).children(recursive=True)
        (daemon,) = fake_codex.daemon_pids()
        assert daemon in {process.pid for process in tree}, "the daemon is below the CLI"
        assert len(list(temporary.iterdir())) == 1, "the probe's private directory exists"
        cli.send_signal(number)
        _, stderr = cli.communicate(timeout=HANG_GUARD)
    assert cli.returncode == 128 + number, stderr
    assert [process.pid for process in tree if not gone(process.pid)] == []
    assert live_daemons(fake_codex) == []
    assert list(temporary.iterdir()) == [], "the private directories are removed"


def test_a_killed_command_leaves_its_supervisor_to_kill_the_probe(
    host_env: HostEnv, fake_codex: FakeCodex, tmp_path: Path
) -> None:
    """SIGKILL cannot be handled: the supervisor sees its parent die and kills the tree."""
    argv = ["resolve", "--codex", str(fake_codex.path), "--timeout", "600"]
    with hanging_probe_cli(fake_codex, argv, host_env.env, tmp_path / "ready.fifo") as cli:
        tree = psutil.Process(cli.pid).children(recursive=True)
        (supervisor,) = psutil.Process(cli.pid).children()
        watch = os.pidfd_open(supervisor.pid)
        cli.kill()
        cli.wait(HANG_GUARD)
        assert select.select([watch], [], [], HANG_GUARD)[0], "the supervisor exits"
        os.close(watch)
    assert len(tree) >= 3, "the supervisor, the fake and its daemon"
    assert [process.pid for process in tree if not gone(process.pid)] == []
    assert live_daemons(fake_codex) == []


@pytest.mark.parametrize("killed", ["keeper", "server"])
def test_a_sigkilled_supervisor_process_leaves_nothing_running(
    host_env: HostEnv, fake_codex: FakeCodex, tmp_path: Path, killed: str
) -> None:
    """The OOM killer or an admin SIGKILLs one of the supervisor's two processes: the other
    kills the step's tree, the double-forked daemon included, and the probe fails."""
    argv = ["probe", str(fake_codex.path), "--timeout", "600"]
    with hanging_probe_cli(fake_codex, argv, host_env.env, tmp_path / "ready.fifo") as cli:
        tree = psutil.Process(cli.pid).children(recursive=True)
        supervisors = [p for p in tree if "supervisor_process" in " ".join(p.cmdline())]
        (daemon,) = fake_codex.daemon_pids()
        assert daemon in {process.pid for process in tree}, "the daemon is below the CLI"
        assert supervisors[0].ppid() == cli.pid, "the keeper is the CLI's child"
        supervisors[0 if killed == "keeper" else -1].kill()
        stdout, _ = cli.communicate(timeout=HANG_GUARD)
    assert "the probe's supervisor process died" in stdout
    assert [process.pid for process in tree if not gone(process.pid)] == []
    assert live_daemons(fake_codex) == []


def test_a_killed_callers_private_directory_is_swept_by_the_next_probe(
    host_env: HostEnv,
    fake_codex: FakeCodex,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """SIGKILL leaves the directory behind; the next probe removes it, and not the one of a
    probe still running."""
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = {**host_env.env, "TMPDIR": str(temporary)}
    argv = ["probe", str(fake_codex.path), "--timeout", "600"]
    with hanging_probe_cli(fake_codex, argv, env, tmp_path / "killed.fifo") as cli:
        supervisor = psutil.Process(cli.pid).children()[0]
        cli.kill()
        cli.wait(HANG_GUARD)
        assert dies_soon(supervisor.pid, HANG_GUARD), "the supervisor kills the probe"
    (abandoned,) = temporary.iterdir()
    with hanging_probe_cli(fake_codex, argv, env, tmp_path / "running.fifo"):
        (running,) = set(temporary.iterdir()) - {abandoned}
        long_ago = time.time() - 2 * ORPHAN_SECONDS  # both old enough to be swept if unlocked
        for directory in (abandoned, running):
            os.utime(directory, (long_ago, long_ago))
        monkeypatch.setattr(tempfile, "tempdir", str(temporary))
        fake_codex.set_fault(None)
        assert probe_launcher(str(fake_codex.path)).ok
        assert list(temporary.iterdir()) == [running]


def test_a_young_unlocked_private_directory_is_left_to_its_probe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A probe makes its directory, then locks it: a sweep by another probe in between (the
    helper starts several at once) must not remove it. Once old, an unlocked one goes."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    young = tmp_path / f"{PREFIX}young"
    young.mkdir(mode=0o700)
    (young / OWNER).touch()  # made, not yet locked
    sweep_abandoned()
    assert young.is_dir()
    sweep_abandoned(now=time.time() + 2 * ORPHAN_SECONDS)
    assert not young.exists()
