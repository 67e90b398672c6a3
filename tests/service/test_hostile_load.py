"""The helper under hostile load (review 2026-12-01, A1, A3-A6, A12, A13, A15-A17): what one
client can make it hold is bounded, and no class of work starves another. Real helper
processes, real sockets; every count is read from the helper or its /proc entry."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from tests.conftest import HostEnv, run_cli
from tests.fakes import FakeCodex, install_fake_codex
from tests.service.helper import (
    DEADLINE,
    Helper,
    ask,
    connect,
    read_line,
    running_helper,
    serve_command,
    wait_until,
)

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")


def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _with_fd_limit(limit: int, socket_path: Path, *extra: str) -> list[str]:
    """serve, started with RLIMIT_NOFILE ``limit`` (soft and hard)."""
    code = (
        "import os, resource, sys; "
        f"resource.setrlimit(resource.RLIMIT_NOFILE, ({limit}, {limit})); "
        "os.execv(sys.executable, sys.argv[1:])"
    )
    return [sys.executable, "-c", code, *serve_command(socket_path, *extra)]


@contextmanager
def _held(path: Path, count: int, *, wait: bool = False) -> Iterator[list[socket.socket]]:
    """``count`` connections, closed afterwards: each connected (``wait``), or only tried
    without waiting for room in the listen backlog."""
    with ExitStack() as stack:
        held = []
        for _ in range(count):
            client = stack.enter_context(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
            client.settimeout(None if wait else 0.0)  # a timeout would not wait for room
            with contextlib.suppress(BlockingIOError):  # a full backlog: still an attempt
                client.connect(str(path))
            client.settimeout(DEADLINE)
            held.append(client)
        yield held


def _ask_fast(client: socket.socket, request: dict[str, object]) -> dict[str, object]:
    """``ask`` for long answers (``read_line`` reads a byte at a time)."""
    client.sendall(json.dumps({"v": 1, **request}).encode() + b"\n")
    with client.makefile("rb") as stream:
        answer: dict[str, object] = json.loads(stream.readline())
    return answer


def _resolve(codex: Path, **fields: object) -> dict[str, object]:
    return {"op": "resolve", "codex": str(codex), **fields}


def test_a_busy_connection_is_not_read(
    helper: Helper, fake_codex: FakeCodex, tmp_path: Path
) -> None:
    """A1: while its request is with a worker, what a client sends stays in the socket."""
    gate = tmp_path / "gate"
    fake_codex.set_fault("slow_start", seconds=DEADLINE, gate=str(gate))
    with connect(helper.socket) as client:
        client.sendall(json.dumps({"v": 1, **_resolve(fake_codex.path)}).encode() + b"\n")
        wait_until(lambda: fake_codex.calls() != [])  # the probe runs: the request is busy
        client.settimeout(2.0)  # how long a send may find no room before we stop
        sent, chunk = 0, b"x" * (1 << 16)
        try:
            while sent < 64 << 20:
                sent += client.send(chunk)
        except TimeoutError:
            pass
        assert sent < 8 << 20  # socket buffers, not the helper's memory
        gate.touch()
        client.settimeout(DEADLINE)
        answer = json.loads(read_line(client))
        assert answer["result"]["decision"] == "published"
        client.sendall(chunk * 20)  # the rest of an over-long line
        assert json.loads(read_line(client))["error"]["reason"] == "request_too_large"


def test_a_trickled_request_gets_an_overall_deadline(host_env: HostEnv, socket_path: Path) -> None:
    """A13: a byte now and then does not keep a connection (or its slot) for ever."""
    with running_helper(host_env.env, socket_path, "--idle-timeout", "1") as helper:
        for trickle in (b" ", b"\n"):
            with connect(helper.socket) as client:
                client.settimeout(0.2)
                started = time.monotonic()
                answer = b""
                while not answer and time.monotonic() - started < 10:
                    client.send(trickle)
                    try:
                        answer = client.recv(4096)
                    except TimeoutError:
                        continue
                assert json.loads(answer)["error"]["reason"] == "idle_timeout"
                assert time.monotonic() - started < 3  # the idle time and a sweep


def test_refused_connections_hold_no_slot_and_no_fd(host_env: HostEnv, socket_path: Path) -> None:
    """A4: a connection refused as busy is closed at once and does not count."""
    extra = ("--max-connections", "2", "--idle-timeout", "300")
    with running_helper(host_env.env, socket_path, *extra) as helper:
        first, second = connect(helper.socket), connect(helper.socket)
        for client in (first, second):
            assert ask(client, {"op": "status"})["ok"] is True
        baseline = _fds(helper.process.pid)
        with _held(helper.socket, 20) as refused:
            for client in refused:
                client.setblocking(True)
                client.settimeout(DEADLINE)
                assert json.loads(read_line(client))["error"]["reason"] == "busy"
                assert read_line(client) == b""  # closed by the helper, not by us
            assert _fds(helper.process.pid) <= baseline
            first.close()
            wait_until(lambda: _fds(helper.process.pid) < baseline)
            with connect(helper.socket) as again:
                assert ask(again, {"op": "status"})["ok"] is True
        second.close()
    busy_lines = [line for line in helper.log if "busy" in line]
    assert len(busy_lines) <= 20


def test_out_of_fds_the_accept_loop_rests(host_env: HostEnv, socket_path: Path) -> None:
    """A5: at EMFILE the helper neither spins nor floods its log, and recovers."""
    command = _with_fd_limit(40, socket_path)
    with running_helper(host_env.env, socket_path, command=command) as helper:
        with _held(helper.socket, 100):
            helper.wait_for_log("accept failed")
            before = _cpu_seconds(helper.process.pid)
            time.sleep(1.0)  # the window measured, not a wait for anything
            spent = _cpu_seconds(helper.process.pid) - before
            assert spent < 0.3  # the loop spun a whole core before
        wait_until(lambda: _fds(helper.process.pid) < 30)
        assert helper.ask({"op": "status"})["ok"] is True
    assert sum("accept failed" in line for line in helper.log) <= 3


SHORT_OF_FDS = """
import json, os, resource, sys
from launcher_probe.host.resolver import resolve_launcher
resolve_launcher(sys.argv[2])  # every module a probe needs is imported now
open_now = len(os.listdir("/proc/self/fd"))
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (open_now + 1, hard))  # one fd to spare
print(json.dumps(resolve_launcher(sys.argv[1]).to_json()))
"""


def test_a_probe_that_failed_for_want_of_fds_is_not_cached(
    host_env: HostEnv, fake_codex: FakeCodex, tmp_path: Path
) -> None:
    """A12: a prober's own shortage (a helper holding every fd it may) is not written to the
    cache every other process reads."""
    warm_dir = tmp_path / "warm-up"
    warm_dir.mkdir(mode=0o755)
    warm_up = install_fake_codex(warm_dir)
    short = subprocess.run(
        [sys.executable, "-c", SHORT_OF_FDS, str(fake_codex.path), str(warm_up.path)],
        env=host_env.env,
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=True,
    )
    decision = json.loads(short.stdout)
    assert (decision["decision"], decision["reason"]) == ("withheld", "spawn_failed")
    assert "Too many open files" in decision["detail"]
    done = run_cli("resolve", "--via", "local", "--codex", str(fake_codex.path), env=host_env.env)
    assert done.returncode == 0, done.stderr
    assert fake_codex.probe_count() == 1  # probed now: nothing was cached


def test_probes_run_whatever_the_fd_numbers(
    host_env: HostEnv, socket_path: Path, fake_codex: FakeCodex
) -> None:
    """A3: with more than 1024 fds open in the helper, a probe still works (no select())."""
    command = _with_fd_limit(4096, socket_path, "--max-connections", "2000")
    with (
        running_helper(host_env.env, socket_path, command=command) as helper,
        _held(helper.socket, 1100, wait=True) as held,
        connect(helper.socket) as mine,
    ):
        assert ask(held[-1], {"op": "status"})["ok"] is True  # all 1100 accepted
        assert _fds(helper.process.pid) > 1100
        answer = ask(mine, _resolve(fake_codex.path))
    assert answer["result"]["decision"] == "published", answer


def test_forget_keeps_no_unbounded_state(helper: Helper) -> None:
    """A6: forgetting made-up paths does not grow the helper."""

    def rss_kib() -> int:
        status = Path(f"/proc/{helper.process.pid}/status").read_text()
        return int(
            next(line for line in status.splitlines() if line.startswith("VmRSS")).split()[1]
        )

    with connect(helper.socket) as client:
        ask(client, {"op": "forget", "codex": "/warm-up"})
        before = rss_kib()
        pad = "x" * 8000
        for start in range(0, 6000, 200):
            batch = b"".join(
                json.dumps({"v": 1, "op": "forget", "codex": f"/{pad}{n}"}).encode() + b"\n"
                for n in range(start, start + 200)
            )
            client.sendall(batch)
            for _ in range(200):
                assert json.loads(read_line(client))["ok"] is True
        grown = rss_kib() - before
    assert grown < 16 << 10, f"{grown} KiB more after 48 MB of forgotten paths"


def test_waiters_and_slow_probes_leave_room_for_others(
    helper: Helper, fake_codex: FakeCodex, tmp_path: Path
) -> None:
    """A15: clients waiting for one slow probe, and slow probes of other binaries, do not
    hold up a cold resolve of a good binary."""
    gate = tmp_path / "gate"
    fake_codex.set_fault("slow_start", seconds=DEADLINE, gate=str(gate))
    slow = []
    for number in range(8):
        directory = tmp_path / f"slow{number}"
        directory.mkdir(mode=0o755)
        other = install_fake_codex(directory)
        other.set_fault("slow_start", seconds=DEADLINE, gate=str(gate))
        slow.append(other)
    good_dir = tmp_path / "good"
    good_dir.mkdir(mode=0o755)
    good = install_fake_codex(good_dir)
    with ExitStack() as stack:
        waiting = []
        for codex in [fake_codex] * 24 + slow:
            client = stack.enter_context(connect(helper.socket))
            client.sendall(json.dumps({"v": 1, **_resolve(codex.path)}).encode() + b"\n")
            waiting.append(client)
        wait_until(lambda: all(codex.calls() for codex in [fake_codex, *slow]))
        started = time.monotonic()
        answer = helper.ask(_resolve(good.path))
        assert answer["result"]["decision"] == "published"
        assert not gate.exists()  # answered while every slow probe still hangs
        assert time.monotonic() - started < 10
        gate.touch()
        for client in waiting:
            assert json.loads(read_line(client))["result"]["decision"] == "published"
    assert fake_codex.probe_count() == 1  # the 24 waited for one probe


def test_logging_is_bounded_per_distinct_path(helper: Helper) -> None:
    """A16: 200 made-up 50 KB paths cost the log far less than they weigh."""
    with connect(helper.socket) as client:
        for number in range(200):
            answer = _ask_fast(client, {"op": "resolve", "codex": f"/{'y' * 50000}{number}"})
            assert answer["result"]["decision"] == "withheld"  # type: ignore[index]
        ask(client, {"op": "status"})
    helper.stop()
    helper.wait_for_log("stopped")
    assert sum(len(line) for line in helper.log) < 200 * 1000


def test_a_request_line_may_hold_a_mebibyte(helper: Helper) -> None:
    """A17: the line limit is the documented 1 MiB, not the JSON parser's default."""
    ident = "i" * 600_000
    answer = helper.ask({"op": "status", "id": ident})
    assert answer["ok"] is True and answer["id"] == ident
    with connect(helper.socket) as client:
        client.sendall(b'{"v": 1, "op": "status", "id": "' + b"j" * (1 << 20) + b'"}\n')
        assert json.loads(read_line(client))["error"]["reason"] == "request_too_large"
