"""Measure the host helper: warm resolve round trip (p50/p99), throughput from concurrent
clients, the helper's peak RSS, and how soon it notices a replaced binary.

    .venv/bin/python scripts/bench_helper.py [--clients 16] [--requests 2000]

Runs a private helper against the fake codex in a temporary directory; prints one table.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fakes import install_fake_codex  # noqa: E402

CLIENT = r"""
import json, socket, sys, time
path, codex, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(path)
reader = s.makefile("rb")
line = json.dumps({"v": 1, "op": "resolve", "codex": codex}).encode() + b"\n"
sys.stdout.write("ready\n"); sys.stdout.flush(); sys.stdin.readline()
times = []
for _ in range(count):
    start = time.perf_counter()
    s.sendall(line)
    answer = reader.readline()
    times.append(time.perf_counter() - start)
    assert b'"published"' in answer, answer
json.dump(times, sys.stdout)
"""


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def run_clients(sock: str, codex: str, clients: int, requests: int) -> tuple[list[float], float]:
    procs = [
        subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", CLIENT, sock, codex, str(requests)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(clients)
    ]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    start = time.perf_counter()
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    times: list[float] = []
    for proc in procs:
        out, _ = proc.communicate()
        times += json.loads(out)
    return times, time.perf_counter() - start


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lpb-", dir="/tmp"))
    helper = None
    try:
        (work / "bin").mkdir(mode=0o755)
        fake = install_fake_codex(work / "bin")
        sock = str(work / "run" / "launcher-probe" / "launcher-probe.sock")
        env = {**os.environ, "XDG_CACHE_HOME": str(work / "cache"), "HOME": str(work)}
        helper = subprocess.Popen(
            [sys.executable, "-m", "launcher_probe", "serve", "--socket", sock],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert helper.stderr is not None
        while "listening on" not in helper.stderr.readline():
            pass
        run_clients(sock, str(fake.path), 1, 200)  # probes once, then warm
        single, _ = run_clients(sock, str(fake.path), 1, args.requests)
        loaded, wall = run_clients(sock, str(fake.path), args.clients, args.requests)
        rss = peak_rss_mib(helper.pid)
        start = time.perf_counter()
        install_fake_codex(work / "bin")  # replace the binary; wait for the watcher's line
        while "re-verifying" not in helper.stderr.readline():
            pass
        noticed = time.perf_counter() - start
        many = f"{args.clients} clients"
        rows = [
            ("round trip, 1 client: p50", f"{percentile(single, 0.5) * 1e6:.0f} µs"),
            ("round trip, 1 client: p99", f"{percentile(single, 0.99) * 1e6:.0f} µs"),
            (f"round trip, {many}: p50", f"{percentile(loaded, 0.5) * 1e6:.0f} µs"),
            (f"round trip, {many}: p99", f"{percentile(loaded, 0.99) * 1e6:.0f} µs"),
            (f"throughput, {many}", f"{len(loaded) / wall:,.0f} resolves/s"),
            ("helper peak RSS", f"{rss:.1f} MiB"),
            ("replaced binary noticed after", f"{noticed:.2f} s"),
        ]
        width = max(len(name) for name, _ in rows)
        for name, value in rows:
            print(f"{name:<{width}}  {value}")
        return 0
    finally:
        if helper is not None:
            helper.terminate()
            helper.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
