"""The helper's rows: ``launcher-probe serve`` on a private socket, driven by plain socket
clients in processes of their own (P3 round trips and throughput, P4 a herd of cold
resolvers through it, its peak RSS). The helper is stopped and reaped at the end."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench_cli import HERD
from bench_core import MIB, Action, Env, Row, interleaved_medians, peak_rss_bytes, percentile

CLIENTS = 16
#: A client: for each count N read on stdin, connect, time N ``resolve`` round trips, and
#: print their times as one JSON line. Imports nothing of launcher_probe.
CLIENT = r"""
import json, socket, sys, time
path, line = sys.argv[1], sys.argv[2].encode() + b"\n"
print("ready", flush=True)
for count in sys.stdin:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    reader = s.makefile("rb")
    times = []
    for _ in range(int(count)):
        start = time.perf_counter()
        s.sendall(line)
        answer = reader.readline()
        times.append(time.perf_counter() - start)
        if b'"ok":true' not in answer.replace(b" ", b""):
            sys.exit(f"helper answered {answer!r}")
    s.close()
    print(json.dumps(times), flush=True)
"""


class Helper:
    """A running helper, its clients, and its socket for control requests."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self.socket = str(env.scratch / "run" / "launcher-probe.sock")
        self.process = subprocess.Popen(
            [env.cli, "serve", "--socket", self.socket],
            env=env.with_cache("helper"),
            stdin=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.log: list[str] = []
        self._listening = threading.Event()
        threading.Thread(target=self._drain, daemon=True).start()
        if not self._listening.wait(30) or self.process.poll() is not None:
            raise SystemExit(f"the helper did not start: {''.join(self.log)}")
        line = json.dumps({"v": 1, "op": "resolve", "codex": env.codex})
        self.clients = [
            subprocess.Popen(
                [env.python, "-I", "-S", "-c", CLIENT, self.socket, line],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            for _ in range(HERD)
        ]
        for client in self.clients:
            assert client.stdout is not None
            if client.stdout.readline() != "ready\n":
                raise SystemExit("a client did not start")

    def _drain(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.log.append(line)
            if "listening on" in line:
                self._listening.set()

    def ask(self, op: str, **fields: Any) -> dict[str, Any]:
        """One control request (``status``, ``forget``); its result."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.connect(self.socket)
            connection.sendall(json.dumps({"v": 1, "op": op, **fields}).encode() + b"\n")
            answer = json.loads(connection.makefile("rb").readline())
        if not answer["ok"]:
            raise SystemExit(f"helper refused {op}: {answer['error']}")
        result: dict[str, Any] = answer["result"]
        return result

    def round_trips(self, clients: int, count: int) -> tuple[list[float], float]:
        """``count`` resolves from each of ``clients`` clients at once: every round trip's
        time, and the wall time until the last answer."""
        chosen = self.clients[:clients]
        start = time.perf_counter()
        for client in chosen:
            assert client.stdin is not None
            client.stdin.write(f"{count}\n")
            client.stdin.flush()
        times: list[float] = []
        for client in chosen:
            assert client.stdout is not None
            times += json.loads(client.stdout.readline())
        return times, time.perf_counter() - start

    def probes(self) -> int:
        return int(self.ask("status")["counters"]["probes"])

    def stop(self) -> int:
        """Close the clients; SIGTERM the helper and reap it: its own peak RSS in bytes
        (``VmHWM``; where there is no /proc, wait4's, which also counts the probes'
        Codex processes)."""
        for client in self.clients:
            assert client.stdin is not None
            client.stdin.close()
            client.wait(timeout=30)
        own = _own_peak_rss(self.process.pid)
        self.process.send_signal(signal.SIGTERM)
        _, status, usage = os.wait4(self.process.pid, 0)
        self.process.returncode = os.waitstatus_to_exitcode(status)
        if self.process.returncode != 0:
            raise SystemExit(f"the helper exited {self.process.returncode}")
        return own or peak_rss_bytes(usage)

    def kill(self) -> None:
        """Leave nothing running, whatever happened."""
        for process in [*self.clients, self.process]:
            if process.poll() is None:
                process.kill()
                process.wait()


def _own_peak_rss(pid: int) -> int | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    line = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


@contextmanager
def running_helper(env: Env) -> Iterator[Helper]:
    helper = Helper(env)
    try:
        yield helper
    finally:
        helper.kill()


def _latency_rows(name: str, times: Sequence[float]) -> Row:
    p50, p99 = percentile(times, 0.5), percentile(times, 0.99)
    return Row(name, p99, "1 ms budget", 1e-3, 1.0, note=f"p50 {p50 * 1e6:.0f} µs")


def round_trips(helper: Helper, raw: Action, runs: int, count: int) -> list[Row]:
    """P3: warm ``resolve`` round trips from one client and from ``CLIENTS`` at once
    (``count`` from each client per round), and the throughput, each round interleaved
    with one raw probe."""
    helper.round_trips(1, 10)  # the helper decides once; warm from here on
    single: list[float] = []
    loaded: list[float] = []
    walls: list[float] = []

    def one() -> None:
        single.extend(helper.round_trips(1, count)[0])

    def many() -> None:
        times, wall = helper.round_trips(CLIENTS, count)
        loaded.extend(times)
        walls.append(wall)

    raw_s = interleaved_medians([raw, one, many], runs)[0]
    per_resolve = sum(walls) / len(loaded)
    p50 = percentile(single, 0.5)
    return [
        _latency_rows("P3 helper round trip, 1 client: p99", single),
        _latency_rows(f"P3 helper round trip, {CLIENTS} clients: p99", loaded),
        Row(f"P3 throughput, {CLIENTS} clients", per_resolve, "goal", 1 / 5000, 1.0, "/s"),
        Row("P3 helper round trip p50", p50, "raw probe (no cache)", raw_s, 0.01),
    ]


def herd(helper: Helper, runs: int) -> list[Row]:
    """P4: ``HERD`` clients asking a helper that forgot its decision, at once, against one
    client doing so (probes counted: one per herd is the goal)."""
    probes: list[int] = []

    def cold(clients: int) -> Action:
        def run() -> None:
            helper.ask("forget", codex=helper.env.codex)
            before = helper.probes()
            helper.round_trips(clients, 1)
            if clients > 1:
                probes.append(helper.probes() - before)

        return run

    one, measured = interleaved_medians([cold(1), cold(HERD)], runs)
    counted = f"probes per herd: {', '.join(map(str, probes))} (goal 1)"
    return [
        Row(
            f"P4 herd of {HERD} via the helper",
            measured,
            "one cold helper resolve",
            one,
            2.0,
            note=counted,
            ok=set(probes) == {1},
        ),
    ]


def rows(env: Env, raw: Action, runs: int, requests: int) -> list[Row]:
    """Every helper row (about ``requests`` round trips from each client); the helper is
    stopped and reaped before this returns."""
    with running_helper(env) as helper:
        found = round_trips(helper, raw, runs, max(1, requests // runs))
        found += herd(helper, max(3, runs // 2))
        rss = helper.stop()
    found.append(Row("peak RSS, helper", rss, "goal", 40 * MIB, 1.0, "MiB"))
    return found
