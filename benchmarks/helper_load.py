#!/usr/bin/env python3
"""The helper under load, beside a bare echo server on the same machine in the same run
(issue 19, item 2): warm ``resolve`` round trips from 16 clients, closed loop (each sends
its next request when the last is answered) and open loop (requests on a fixed schedule,
5,000/s in all; latency counted from the scheduled time, so a stall is not hidden).

Goals: open loop p99 <= 1 ms; closed loop p99 <= 1.5 x the echo server's; >= 20,000 warm
resolves/s. Self-contained (the lead folds its rows into scripts/bench):

    .venv/bin/python scripts/bench_helper_load.py [--codex PATH] [--json]

The helper, the echo server and every client are stopped and reaped before it exits.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CLIENTS = 16
OPEN_RATE = 5000.0  # requests/s offered in all
OPEN_SECONDS = 4.0
CLOSED_REQUESTS = 2000  # per client and round
ROUNDS = 3  # interleaved: helper, echo, helper, echo, ...

#: argv[1] socket, argv[2] request line, argv[3] "closed" N | "open" RATE SECONDS. Prints
#: every latency (seconds) as one JSON line.
CLIENT = r"""
import json, socket, sys, time
path, line, mode = sys.argv[1], sys.argv[2].encode() + b"\n", sys.argv[3]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(path)
reader = s.makefile("rb")
print("ready", flush=True)
sys.stdin.readline()
times = []
if mode == "closed":
    for _ in range(int(sys.argv[4])):
        start = time.perf_counter()
        s.sendall(line)
        answer = reader.readline()
        times.append(time.perf_counter() - start)
else:
    interval, seconds = 1.0 / float(sys.argv[4]), float(sys.argv[5])
    begin = time.perf_counter()
    due = begin
    while due - begin < seconds:
        now = time.perf_counter()
        if now < due:
            time.sleep(due - now)
        s.sendall(line)
        answer = reader.readline()
        times.append(time.perf_counter() - due)
        due += interval
if b'"ok":true' not in answer.replace(b" ", b""):
    sys.exit(f"answered {answer!r}")
print(json.dumps(times), flush=True)
"""
#: One thread, ``selectors``, as the helper's loop: each line is answered with argv[2].
ECHO = r"""
import selectors, socket, sys
path, answer = sys.argv[1], sys.argv[2].encode() + b"\n"
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(path)
listener.listen(128)
selector = selectors.DefaultSelector()
selector.register(listener, selectors.EVENT_READ)
pending = {}
print("ready", flush=True)
while True:
    for key, _ in selector.select():
        if key.fileobj is listener:
            connection = listener.accept()[0]
            selector.register(connection, selectors.EVENT_READ)
            pending[connection] = b""
            continue
        data = key.fileobj.recv(65536)
        if not data:
            selector.unregister(key.fileobj)
            key.fileobj.close()
            del pending[key.fileobj]
            continue
        data = pending[key.fileobj] + data
        lines = data.count(b"\n")
        pending[key.fileobj] = data[data.rfind(b"\n") + 1 :]
        if lines:
            key.fileobj.sendall(answer * lines)
"""


def _started(argv: list[str], **options: Any) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, **options
    )
    assert process.stdout is not None
    if process.stdout.readline() != "ready\n":
        process.kill()
        process.wait()
        raise SystemExit(f"{argv[:3]} did not start")
    return process


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def _run_clients(path: str, line: str, mode: list[str]) -> tuple[list[float], float]:
    """CLIENTS processes at once: every latency, and the wall time of the whole run."""
    clients = [
        _started([sys.executable, "-I", "-S", "-c", CLIENT, path, line, *mode])
        for _ in range(CLIENTS)
    ]
    try:
        start = time.perf_counter()
        for client in clients:
            assert client.stdin is not None
            client.stdin.write("go\n")
            client.stdin.flush()
        times: list[float] = []
        for client in clients:
            assert client.stdout is not None
            times += json.loads(client.stdout.readline())
        return times, time.perf_counter() - start
    finally:
        for client in clients:
            client.kill()
            client.wait()


def _default_codex() -> str | None:
    found = sorted(
        glob.glob(
            str(ROOT / ".cache/codex/*/node_modules/@openai/codex-linux-*/vendor/*/bin/codex")
        )
    )
    return found[-1] if found else None


def _shown(value: object) -> str:
    if isinstance(value, list):
        return " / ".join(_shown(item) for item in value)
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--codex", help="the Codex CLI the helper resolves (default: the fetched one)"
    )
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args()
    codex = args.codex or _default_codex()
    if codex is None:
        raise SystemExit("no Codex CLI: pass --codex or run scripts/fetch-codex")
    with tempfile.TemporaryDirectory(prefix="lpb-", dir="/tmp") as scratch:
        base = Path(scratch)
        for name in ("home", "config", "cache", "run"):
            (base / name).mkdir(mode=0o700)
        env = {
            **{
                k: v for k, v in os.environ.items() if not k.startswith(("LAUNCHER_PROBE_", "XDG_"))
            },
            "HOME": str(base / "home"),
            "XDG_CONFIG_HOME": str(base / "config"),
            "XDG_CACHE_HOME": str(base / "cache"),
            "XDG_RUNTIME_DIR": str(base / "run"),
        }
        helper_socket, echo_socket = str(base / "run" / "h.sock"), str(base / "run" / "e.sock")
        request = json.dumps({"v": 1, "op": "resolve", "codex": codex})
        helper = subprocess.Popen(
            [sys.executable, "-m", "launcher_probe", "serve", "--socket", helper_socket],
            env=env,
            stdin=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        echo = None
        try:
            deadline = time.monotonic() + 30
            while not os.path.exists(helper_socket):
                if time.monotonic() > deadline or helper.poll() is not None:
                    raise SystemExit("the helper did not start")
                time.sleep(0.01)
            warm = _run_clients(helper_socket, request, ["closed", "1"])  # the probe
            del warm
            import socket

            with socket.socket(socket.AF_UNIX) as probe:
                probe.connect(helper_socket)
                probe.sendall(request.encode() + b"\n")
                answer = probe.makefile("rb").readline().decode().rstrip("\n")
            if '"decision":"published"' not in answer:
                raise SystemExit(f"the helper does not publish {codex}: {answer[:300]}")
            echo = _started([sys.executable, "-I", "-S", "-c", ECHO, echo_socket, answer])
            closed: dict[str, list[float]] = {"helper": [], "echo": []}
            rates: dict[str, list[float]] = {"helper": [], "echo": []}
            for _ in range(ROUNDS):
                for name, path in (("helper", helper_socket), ("echo", echo_socket)):
                    times, wall = _run_clients(path, request, ["closed", str(CLOSED_REQUESTS)])
                    closed[name].append(_percentile(times, 0.99))
                    rates[name].append(len(times) / wall)
            opened = {}
            for name, path in (("helper", helper_socket), ("echo", echo_socket)):
                rate = str(OPEN_RATE / CLIENTS)
                times, _ = _run_clients(path, request, ["open", rate, str(OPEN_SECONDS)])
                opened[name] = (_percentile(times, 0.5), _percentile(times, 0.99), len(times))
        finally:
            helper.terminate()
            helper.wait(timeout=30)
            if echo is not None:
                echo.kill()
                echo.wait()
    median = lambda values: sorted(values)[len(values) // 2]  # noqa: E731
    helper_p99, echo_p99 = median(closed["helper"]), median(closed["echo"])
    rows = [
        {
            "row": f"closed loop, {CLIENTS} clients: p99 (median of {ROUNDS})",
            "helper_ms": helper_p99 * 1e3,
            "echo_ms": echo_p99 * 1e3,
            "ratio": helper_p99 / echo_p99,
            "goal": "ratio <= 1.5",
            "met": helper_p99 <= 1.5 * echo_p99,
        },
        {
            "row": f"closed loop, {CLIENTS} clients: warm resolves/s (median of {ROUNDS})",
            "helper": median(rates["helper"]),
            "echo": median(rates["echo"]),
            "goal": ">= 20000/s",
            "met": median(rates["helper"]) >= 20000,
        },
        {
            "row": f"open loop, {OPEN_RATE:.0f}/s offered by {CLIENTS} clients: p50 / p99",
            "helper_ms": [opened["helper"][0] * 1e3, opened["helper"][1] * 1e3],
            "echo_ms": [opened["echo"][0] * 1e3, opened["echo"][1] * 1e3],
            "answered": opened["helper"][2],
            "goal": "helper p99 <= 1 ms",
            "met": opened["helper"][1] <= 1e-3,
        },
    ]
    if args.json:
        print(json.dumps({"load": _load(), "codex": codex, "rows": rows}, indent=2))
        return 0
    print(f"helper under load (load average {_load()}; {os.cpu_count()} cores; {codex})")
    for row in rows:
        values = {k: v for k, v in row.items() if k not in ("row", "goal", "met")}
        shown = ", ".join(f"{k} {_shown(v)}" for k, v in values.items())
        print(f"  {row['row']}: {shown}  [{row['goal']}: {'met' if row['met'] else 'NOT met'}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
