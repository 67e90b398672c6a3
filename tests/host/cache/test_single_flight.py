"""Single flight: many resolvers of one cold path run one probe; locks time out and die."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from launcher_probe.contract import Reason
from launcher_probe.host.cache import discovery_memo
from launcher_probe.host.cache.herd import Claim
from launcher_probe.host.cache.policy import VerdictCache
from launcher_probe.host.cache.store import memo_lock_file
from launcher_probe.host.decision import Decision, Published, Withheld
from launcher_probe.host.resolver import ResolverConfig, resolve_launcher
from tests.conftest import ROOT, HostEnv, run_cli
from tests.fakes import HANG_GUARD, FakeCodex, install_fake_codex
from tests.host.memo_check import forget_memos
from tests.processes import dies_soon, wait_until

#: A resolver process that says it is ready (one byte on fd argv[1]), then waits for the
#: go signal (EOF on stdin) before it resolves; at the end it says on stderr which of the
#: slow path's modules it imported.
WAIT_THEN_RESOLVE = """
import os, sys
from launcher_probe.cli import main
os.write(int(sys.argv[1]), b"r")
os.close(int(sys.argv[1]))
sys.stdin.buffer.read()
code = main(sys.argv[2:])
slow = ("launcher_probe.host.discovery", "launcher_probe.host.discovery.places",
        "launcher_probe.host.probe", "filelock")
print("imported:", *sorted(set(slow) & set(sys.modules)), file=sys.stderr)
sys.exit(code)
"""
PYTHON_M = (sys.executable, "-m", "launcher_probe")
SLOW_PATH = "imported: filelock launcher_probe.host.discovery launcher_probe.host.probe"
#: ... and for a plain resolve, which searches the places (``discovery.places``); its
#: waiters read the config file (in the discovery package) before they wait, but search
#: nothing: that file names what the helper would be asked about. One that starts once
#: the memo is written answers from it at once, reading nothing more.
PLAIN_SLOW_PATH = (
    "imported: filelock launcher_probe.host.discovery launcher_probe.host.discovery.places "
    "launcher_probe.host.probe"
)
PLAIN_WAITERS = {"imported: launcher_probe.host.discovery", "imported:"}

#: Holds a lock file (an OS flock, as any flock-based locker takes it) until killed; says
#: "held" once it holds it.
HOLD_LOCK = """
import fcntl, os, sys
os.makedirs(os.path.dirname(sys.argv[1]), mode=0o700, exist_ok=True)
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
"""

#: Holds the herd claim on a lock file (a POSIX ``lockf``, as a probing resolve takes it)
#: until its stdin closes; says "claimed" once it holds it.
HOLD_CLAIM = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.lockf(fd, fcntl.LOCK_EX)
print("claimed", flush=True)
sys.stdin.read()
"""

#: Takes the herd claim on a lock file without waiting; says "claimed" when it could.
CLAIM_NOW = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("claimed")
"""

#: Runs the command argv[1] (JSON) argv[2] times as a child subreaper, each run signalled
#: (SIGTERM) once its first child shows, after 0 to 7 more looks at that child; prints
#: the exit codes seen and, by run, what each left behind (its orphans are the harness's
#: children once it has exited), killed and reaped before the next run.
SIGNAL_AROUND_THE_LAUNCH = """
import ctypes, json, os, signal, subprocess, sys
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER

def children(pid):
    found = []
    for task in os.listdir(f"/proc/{pid}/task"):  # whichever thread started them
        try:
            with open(f"/proc/{pid}/task/{task}/children") as listing:
                found += [int(word) for word in listing.read().split()]
        except FileNotFoundError:
            pass
    return found

codes, left = set(), {}
for run in range(int(sys.argv[2])):
    command = subprocess.Popen(json.loads(sys.argv[1]), stdout=subprocess.DEVNULL)
    while not (first := children(command.pid)):  # polled: as close to the fork as can be
        if command.poll() is not None:
            sys.exit(f"run {run}: exited {command.returncode} before any child showed")
    for _ in range(run % 8):
        os.path.exists(f"/proc/{first[0]}/cmdline")
    command.send_signal(signal.SIGTERM)
    codes.add(command.wait())
    if orphans := children(os.getpid()):
        left[run] = len(orphans)
        for pid in orphans:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
print(json.dumps({"codes": sorted(codes), "left": left}))
"""

#: The number of fcntl(2) in /proc/PID/task/TID/syscall, by machine; its F_SETLKW command
#: (a blocking wait; a poll would be F_SETLK, 6).
FCNTL_SYSCALL = {"x86_64": 72, "aarch64": 25}
F_SETLKW = 7


def _herd(count: int, env: dict[str, str], *args: str) -> list[tuple[int, dict[str, Any], str]]:
    """``count`` CLI ``resolve --json ARGS`` started at once: each one's exit code, decision
    and the slow path's modules it imported."""
    ready_read, ready_write = os.pipe()
    go_read, go_write = os.pipe()
    waiter = (sys.executable, "-c", WAIT_THEN_RESOLVE)
    children = [
        subprocess.Popen(
            [*waiter, str(ready_write), "resolve", "--json", *args],
            env=env,
            cwd=ROOT,
            stdin=go_read,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(ready_write,),
        )
        for _ in range(count)
    ]
    os.close(ready_write)
    os.close(go_read)
    ready = b""
    while len(ready) < count:
        chunk = os.read(ready_read, count)
        assert chunk, "a resolver died before it was ready"
        ready += chunk
    os.close(ready_read)
    os.close(go_write)  # go: every child sees EOF at once
    done = []
    for child in children:
        out, err = child.communicate(timeout=120)
        done.append((child.returncode, json.loads(out), err.decode().splitlines()[-1]))
    return done


def _one_prober(
    done: list[tuple[int, dict[str, Any], str]],
    fake_codex: FakeCodex,
    slow_path: str = SLOW_PATH,
    waiters: frozenset[str] | set[str] = frozenset({"imported:"}),
) -> None:
    """Every process of the herd ``done`` published ``fake_codex`` from one probe, and only
    the one that probed imported ``slow_path``: the others (each importing one of
    ``waiters``) waited for it and read again."""
    count = len(done)
    assert [code for code, _, _ in done] == [0] * count
    decisions = [decision for _, decision, _ in done]
    imports = [modules for _, _, modules in done]

    assert fake_codex.probe_count() == 1
    prober = [d["from_cache"] for d in decisions].index(False)
    assert imports[prober] == slow_path
    assert set(imports[:prober] + imports[prober + 1 :]) <= waiters
    assert {json.dumps(d["launcher"]) for d in decisions} == {
        json.dumps({"codexExecutable": str(fake_codex.path)})
    }
    assert sorted(d["from_cache"] for d in decisions) == [False] + [True] * (count - 1)
    assert len({d["probed_at"] for d in decisions}) == 1


def test_32_processes_one_cold_path_one_probe(host_env: HostEnv, fake_codex: FakeCodex) -> None:
    _one_prober(_herd(32, host_env.env, "--codex", str(fake_codex.path)), fake_codex)


def _on_path(tmp_path: Path, host_env: HostEnv) -> tuple[FakeCodex, dict[str, str]]:
    """A fake codex in a directory of its own first on ``PATH`` (discovery's first
    candidate), and that environment."""
    directory = tmp_path / "on-path"
    directory.mkdir(mode=0o755)
    fake_codex = install_fake_codex(directory)
    return fake_codex, {**host_env.env, "PATH": f"{directory}:{host_env.env['PATH']}"}


@pytest.fixture(params=[False, True], ids=["--codex", "plain"])
def resolving(
    request: pytest.FixtureRequest, host_env: HostEnv, tmp_path: Path
) -> tuple[FakeCodex, dict[str, str], list[str]]:
    """A fake codex, the environment and the ``resolve`` arguments that find it: named by
    ``--codex``, or first on ``PATH`` for a plain resolve (discovery's first candidate)."""
    fake_codex, env = _on_path(tmp_path, host_env)
    return fake_codex, env, [] if request.param else ["--codex", str(fake_codex.path)]


def test_32_plain_resolves_one_discovery_one_probe(host_env: HostEnv, tmp_path: Path) -> None:
    """Without an operator path the first process whose discovery memo missed claims this
    environment's discovery; the others wait for it, then answer from the memo it wrote."""
    fake_codex, env = _on_path(tmp_path, host_env)
    _one_prober(_herd(32, env), fake_codex, PLAIN_SLOW_PATH, PLAIN_WAITERS)


def test_32_plain_resolves_finding_nothing_discover_once(host_env: HostEnv) -> None:
    """A herd on a machine with no Codex: one process discovers, and the memo of its
    ``not_found`` answers every other the same."""
    done = _herd(32, host_env.env)
    assert [code for code, _, _ in done] == [3] * 32
    assert {(d["reason"], d["detail"]) for _, d, _ in done} == {
        (done[0][1]["reason"], done[0][1]["detail"])
    }
    assert done[0][1]["reason"] == "not_found"
    imports = [modules for _, _, modules in done]
    searched = "imported: launcher_probe.host.discovery launcher_probe.host.discovery.places"
    assert imports.count(searched) == 1
    assert set(imports) - {searched} <= PLAIN_WAITERS


def test_a_miss_just_before_the_answer_is_written_answers_at_the_claim(
    resolving: tuple[FakeCodex, dict[str, str], list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that missed just before the prober wrote its answer (a record, or the
    memo) and claims once that one let go reads again on its claim: it answers and frees
    the claim, running no slow path (in a herd such a latecomer discovered a second time)."""
    fake_codex, env, args = resolving
    monkeypatch.setenv("PATH", env["PATH"])
    prober = run_cli("resolve", "--json", *args, env=env)  # it wrote its answer and went
    assert prober.returncode == 0, prober.stderr
    cache = VerdictCache()
    turn: Decision | Claim | None
    if args:
        turn = cache.wait_turn("explicit", str(fake_codex.path))
        lock_file = cache.lock_file(str(fake_codex.path))
    else:
        turn = discovery_memo.wait_turn(cache)
        lock_file = memo_lock_file(discovery_memo.memo_file(cache))
    assert isinstance(turn, Published), turn
    assert turn.descriptor.codex_executable == str(fake_codex.path) and turn.from_cache
    holder = subprocess.run(
        [sys.executable, "-c", CLAIM_NOW, lock_file], capture_output=True, text=True, check=False
    )
    assert holder.stdout == "claimed\n", holder.stderr
    assert fake_codex.probe_count() == 1


def test_a_herd_of_a_failing_binary_probes_once(host_env: HostEnv, fake_codex: FakeCodex) -> None:
    """The record a failed probe leaves publishes nothing: every waiter then decides the
    slow way, from that cached failure (the entry lock keeps it to one probe)."""
    fake_codex.set_fault("wrong_nonce")
    done = _herd(8, host_env.env, "--codex", str(fake_codex.path))
    assert [code for code, _, _ in done] == [3] * 8
    assert {decision["reason"] for _, decision, _ in done} == {"probe_failed"}
    assert fake_codex.probe_count() == 1


def test_threads_in_one_process_share_one_probe(host_env: HostEnv, fake_codex: FakeCodex) -> None:
    count = 8
    barrier = threading.Barrier(count)
    decisions: list[Decision] = []

    def resolve() -> None:
        barrier.wait()
        decisions.append(resolve_launcher(str(fake_codex.path)))

    threads = [threading.Thread(target=resolve) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert len(decisions) == count
    assert all(isinstance(d, Published) for d in decisions)
    assert fake_codex.probe_count() == 1
    assert sum(1 for d in decisions if isinstance(d, Published) and not d.from_cache) == 1


def _hold(lock_file: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(lock_file)],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    assert holder.stdout.readline() == "held\n"
    return holder


def _resolve(
    fake_codex: FakeCodex, host_env: HostEnv, *extra: str
) -> subprocess.CompletedProcess[str]:
    return run_cli("resolve", "--json", "--codex", str(fake_codex.path), *extra, env=host_env.env)


def test_lock_held_past_the_timeout_is_lock_timeout(
    host_env: HostEnv, fake_codex: FakeCodex
) -> None:
    lock_file = Path(VerdictCache().lock_file(str(fake_codex.path)))
    holder = _hold(lock_file, host_env.env)
    try:
        done = _resolve(fake_codex, host_env, "--lock-timeout", "0.5")
        decision = json.loads(done.stdout)
        assert done.returncode == 3
        assert decision["reason"] == "lock_timeout"
        assert str(lock_file) in decision["detail"]
        waited = re.search(r"after waiting (\d+\.\d) s", decision["detail"])
        assert waited is not None and float(waited.group(1)) >= 0.5
        assert "lock_timeout" in done.stderr and str(lock_file) in done.stderr
        assert fake_codex.probe_count() == 0
    finally:
        holder.kill()
        holder.wait()


def _supervisors(pid: int) -> list[psutil.Process]:
    """The children of ``pid`` that run the probe's supervisor (exec'd already)."""
    found = []
    for child in psutil.Process(pid).children():
        with contextlib.suppress(psutil.Error):
            if "supervisor_process" in " ".join(child.cmdline()):
                found.append(child)
    return found


def _launched_below(cli: subprocess.Popen[str]) -> list[psutil.Process]:
    """Wait until ``cli`` has launched the probe's supervisor (the launch signals nothing:
    /proc is watched); its supervisors."""
    supervisors: list[psutil.Process] = []

    def launched() -> bool:
        assert cli.poll() is None, "the resolver ended before it launched a supervisor"
        supervisors[:] = _supervisors(cli.pid)
        return bool(supervisors)

    wait_until(launched, HANG_GUARD)
    return supervisors


def test_a_resolver_signalled_before_it_probes_leaves_no_process(
    resolving: tuple[FakeCodex, dict[str, str], list[str]],
) -> None:
    """The process that claims the entry launches the probe's supervisor before its slow
    imports and the entry lock (after discovery, on a miss, for a plain resolve);
    signalled while it waits for that lock (nothing probed yet), it exits 128+N with its
    supervisor ended and reaped."""
    fake_codex, env, named = resolving
    lock_file = Path(VerdictCache().lock_file(str(fake_codex.path)))
    holder = _hold(lock_file, env)
    argv = [*PYTHON_M, "resolve", *named, "--lock-timeout", "600"]
    cli = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True)
    try:
        supervisors = _launched_below(cli)
        cli.send_signal(signal.SIGTERM)
        cli.communicate(timeout=HANG_GUARD)
        assert cli.returncode == 128 + signal.SIGTERM
        assert all(dies_soon(process.pid, 0) for process in supervisors)
        assert fake_codex.probe_count() == 0
    finally:
        cli.kill()
        cli.wait()
        holder.kill()
        holder.wait()


def test_a_supervisor_launched_for_a_miss_another_process_answers_is_ended(
    resolving: tuple[FakeCodex, dict[str, str], list[str]],
) -> None:
    """A resolver that missed launches the supervisor, then waits for the entry lock; the
    holder stores the verdict meanwhile: the resolver answers from it, probes nothing, and
    its supervisor, which ran nothing, is ended and reaped."""
    fake_codex, env, named = resolving
    assert run_cli("resolve", "--json", *named, env=env).returncode == 0
    cache = VerdictCache()
    record = Path(cache.record_file(str(fake_codex.path)))
    kept = record.read_bytes()
    record.unlink()
    forget_memos()
    holder = _hold(Path(cache.lock_file(str(fake_codex.path))), env)
    argv = [*PYTHON_M, "resolve", "--json", *named]
    cli = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True)
    try:
        supervisors = _launched_below(cli)
        written = record.with_name(record.name + ".restored")
        written.write_bytes(kept)
        os.replace(written, record)
        assert holder.stdin is not None
        holder.stdin.close()
        out, _ = cli.communicate(timeout=HANG_GUARD)
        assert cli.returncode == 0
        assert json.loads(out)["from_cache"] is True
        assert all(dies_soon(process.pid, 0) for process in supervisors)
        assert fake_codex.probe_count() == 1  # the first resolve's
    finally:
        for child in (cli, holder):
            child.kill()
            child.wait()


@pytest.mark.skipif(
    not os.path.exists(f"/proc/self/task/{os.getpid()}/children"),
    reason="needs /proc/PID/task/TID/children",
)
def test_a_resolver_signalled_while_it_launches_its_supervisor_leaves_nothing(
    resolving: tuple[FakeCodex, dict[str, str], list[str]],
) -> None:
    """A signal can land at any moment, also while the supervisor's launch returns (its
    child forked or exec'd, the Popen not back yet). Resolvers signalled as their first
    child shows, and a varying few steps later, each exit 128+N and leave nothing: below a
    child subreaper, whatever one left (running, or dead and not reaped by it) would
    become the subreaper's child."""
    fake_codex, env, named = resolving
    lock_file = Path(VerdictCache().lock_file(str(fake_codex.path)))
    holder = _hold(lock_file, env)  # nothing is probed: the launch is the only child
    argv = [*PYTHON_M, "resolve", *named, "--lock-timeout", "600"]
    harness = [sys.executable, "-c", SIGNAL_AROUND_THE_LAUNCH, json.dumps(argv), "16"]
    try:
        done = subprocess.run(
            harness, env=env, capture_output=True, text=True, timeout=16 * HANG_GUARD
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == {"codes": [128 + signal.SIGTERM], "left": {}}
        assert fake_codex.probe_count() == 0
    finally:
        holder.kill()
        holder.wait()


def test_a_holder_killed_with_sigkill_does_not_block(
    host_env: HostEnv, fake_codex: FakeCodex
) -> None:
    lock_file = Path(VerdictCache().lock_file(str(fake_codex.path)))
    holder = _hold(lock_file, host_env.env)
    os.kill(holder.pid, signal.SIGKILL)
    assert holder.wait() == -signal.SIGKILL
    assert lock_file.exists()  # the file stays; the OS lock died with its holder
    done = _resolve(fake_codex, host_env, "--lock-timeout", "20")
    assert done.returncode == 0, done.stdout
    assert json.loads(done.stdout)["from_cache"] is False
    assert fake_codex.probe_count() == 1


def test_an_unusable_lock_file_probes_uncached_with_a_warning(
    host_env: HostEnv, fake_codex: FakeCodex
) -> None:
    """A lock file that cannot be opened (here a directory in its place) is not a vanished
    binary: the candidate is probed without the cache and published, with a warning."""
    lock_file = Path(VerdictCache().lock_file(str(fake_codex.path)))
    lock_file.mkdir(mode=0o700, parents=True)
    for expected_probes in (1, 2):
        done = _resolve(fake_codex, host_env)
        assert done.returncode == 0, done.stdout
        decision = json.loads(done.stdout)
        assert decision["from_cache"] is False
        (warning,) = decision["warnings"]
        assert str(lock_file) in warning and "not cached" in warning
        assert fake_codex.probe_count() == expected_probes


def _fds_on(path: Path) -> list[str]:
    found = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/self/fd/{fd}") == str(path):
                found.append(fd)
    return found


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
def test_a_timed_out_waiter_leaves_no_fd_and_no_lock(
    host_env: HostEnv, fake_codex: FakeCodex
) -> None:
    """In process: the wait times out (lock_timeout) and leaves no descriptor on the lock
    file behind; once the holder dies, another process takes the lock at once and the
    next resolve probes."""
    lock_file = Path(VerdictCache().lock_file(str(fake_codex.path)))
    holder = _hold(lock_file, host_env.env)
    try:
        config = ResolverConfig(lock_timeout=0.3)
        decision = resolve_launcher(str(fake_codex.path), config=config)
        assert isinstance(decision, Withheld) and decision.reason is Reason.LOCK_TIMEOUT
        assert _fds_on(lock_file) == []
    finally:
        holder.kill()
        holder.wait()
    taker = _hold(lock_file, host_env.env)  # would block if a lock were left held
    taker.kill()
    taker.wait()
    decision = resolve_launcher(str(fake_codex.path))
    assert isinstance(decision, Published) and decision.from_cache is False
    assert fake_codex.probe_count() == 1


#: Holds the herd claim and the entry lock on a lock file, as a prober does (stopped
#: mid-probe, say), until its stdin closes; says "holding" once it holds both.
HOLD_BOTH = """
import fcntl, os, sys
os.makedirs(os.path.dirname(sys.argv[1]), mode=0o700, exist_ok=True)
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.lockf(fd, fcntl.LOCK_EX)
fcntl.flock(fd, fcntl.LOCK_EX)
print("holding", flush=True)
sys.stdin.read()
"""


def _tasks() -> int:
    return len(os.listdir("/proc/self/task"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs /proc/self")
def test_waits_that_time_out_on_one_claim_share_one_thread(
    host_env: HostEnv, fake_codex: FakeCodex
) -> None:
    """A long-lived process (the helper) whose resolves of one binary each time out on a
    prober that holds on (stopped): one thread and one descriptor wait for that claim, not
    one per resolve; both go once the claim does, and the next resolve probes."""
    lock_file = VerdictCache().lock_file(str(fake_codex.path))
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_BOTH, lock_file],
        env=host_env.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "holding\n"
        before = _tasks()
        for _ in range(12):
            decision = resolve_launcher(
                str(fake_codex.path), config=ResolverConfig(lock_timeout=0.05)
            )
            assert isinstance(decision, Withheld) and decision.reason is Reason.LOCK_TIMEOUT
        assert (_tasks(), len(_fds_on(Path(lock_file)))) == (before + 1, 1)  # one wait, shared
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
    wait_until(lambda: (_tasks(), _fds_on(Path(lock_file))) == (before, []))
    decision = resolve_launcher(str(fake_codex.path))
    assert isinstance(decision, Published) and decision.from_cache is False
    assert fake_codex.probe_count() == 1


def test_a_cold_resolve_locks_through_filelock(
    host_env: HostEnv, fake_codex: FakeCodex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The entry lock is filelock's: every acquire of a cold resolve goes through it, once,
    with the short poll interval, and the lock file is private."""
    import filelock

    from launcher_probe.host.cache.entry_lock import POLL_INTERVAL

    acquired: list[tuple[str, object]] = []
    acquire = filelock.UnixFileLock.acquire

    def counted(self: filelock.UnixFileLock, *args: object, **kwargs: object) -> object:
        acquired.append((self.lock_file, kwargs.get("poll_interval")))
        return acquire(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(filelock.UnixFileLock, "acquire", counted)
    decision = resolve_launcher(str(fake_codex.path))
    assert isinstance(decision, Published) and decision.from_cache is False
    lock_file = VerdictCache().lock_file(str(fake_codex.path))
    assert acquired == [(lock_file, POLL_INTERVAL)]
    assert os.stat(lock_file).st_mode & 0o777 == 0o600


def _in_fcntl(pid: int) -> bool:
    """Whether a thread of ``pid`` is blocked in fcntl(2) F_SETLKW now (its ``syscall``
    file: the number, then the arguments in hex)."""
    wanted = [FCNTL_SYSCALL[os.uname().machine], F_SETLKW]
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = Path(f"/proc/{pid}/task/{task}/syscall").read_text().split()
            if [int(fields[0]), int(fields[2], 16)] == wanted:
                return True
    return False


@pytest.mark.skipif(
    os.uname().machine not in FCNTL_SYSCALL or not os.path.isdir("/proc/self/task"),
    reason="reads /proc/PID/task/TID/syscall",
)
def test_a_waiter_sleeps_in_the_kernel_until_the_claim_goes(
    host_env: HostEnv, fake_codex: FakeCodex
) -> None:
    """A resolve that misses while another process claims the entry blocks in fcntl(2)
    (F_SETLKW on a thread, no polling) and, once the claim goes, answers from the record
    the claimant left: no second probe, nothing of the slow path imported."""
    assert _resolve(fake_codex, host_env).returncode == 0
    cache = VerdictCache()
    record = Path(cache.record_file(str(fake_codex.path)))
    kept = record.read_bytes()
    record.unlink()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_CLAIM, cache.lock_file(str(fake_codex.path))],
        env=host_env.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    waiter = None
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "claimed\n"
        resolve = ["resolve", "--json", "--codex", str(fake_codex.path)]
        waiter = subprocess.Popen(
            [sys.executable, "-X", "importtime", "-m", "launcher_probe", *resolve],
            env=host_env.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

        def blocked() -> bool:
            assert waiter is not None and waiter.poll() is None, waiter and waiter.communicate()
            return _in_fcntl(waiter.pid)

        wait_until(blocked, 60)  # the waiter's state is seen in /proc only
        written = record.with_name(record.name + ".restored")
        fd = os.open(written, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, kept)
        os.close(fd)
        os.replace(written, record)
        assert holder.stdin is not None
        holder.stdin.close()
        assert holder.wait(timeout=30) == 0
        out, err = waiter.communicate(timeout=60)
    finally:
        for child in (holder, waiter):
            if child is not None and child.poll() is None:
                child.kill()
                child.wait()
    assert waiter.returncode == 0, err
    imported = set(re.findall(r"^import time:.*\|\s*(\S+)$", err, re.MULTILINE))
    assert "launcher_probe.host.resolver" in imported  # the measurement saw the resolver
    assert imported & set(SLOW_PATH.split()[1:]) == set()
    decision = json.loads(out)
    assert decision["from_cache"] is True
    assert decision["launcher"] == {"codexExecutable": str(fake_codex.path)}
    assert fake_codex.probe_count() == 1


@pytest.mark.parametrize("plain", [False, True], ids=["--codex", "plain"])
def test_the_lock_timeout_bounds_the_whole_wait_for_a_prober(
    host_env: HostEnv, tmp_path: Path, plain: bool
) -> None:
    """A waiter behind a probe that does not end waits ``--lock-timeout`` in all: for the
    prober's claim (of the entry, or of the environment's discovery for a plain resolve)
    and then its entry lock together, not that long for each."""
    directory = tmp_path / "on-path"
    directory.mkdir(mode=0o755)
    fake_codex = install_fake_codex(directory)
    env = {**host_env.env, "PATH": f"{directory}:{host_env.env['PATH']}"}
    named = [] if plain else ["--codex", str(fake_codex.path)]
    fake_codex.set_fault("slow_start", seconds=HANG_GUARD, gate=str(tmp_path / "never"))
    argv = [*PYTHON_M, "resolve", "--json", *named]
    prober = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL)
    try:
        wait_until(lambda: fake_codex.probe_count() == 1)  # it holds the claim and the lock
        started = time.monotonic()
        done = run_cli("resolve", "--json", *named, "--lock-timeout", "2", env=env)
        took = time.monotonic() - started
    finally:
        prober.kill()
        prober.wait()
    decision = json.loads(done.stdout)
    assert (done.returncode, decision["reason"]) == (3, "lock_timeout")
    waited = re.search(r"after waiting (\d+\.\d) s", decision["detail"])
    assert waited is not None and 2.0 <= float(waited.group(1)) < 3.0
    assert took < 3.8  # one timeout (and a start-up), not two
    assert fake_codex.probe_count() == 1
