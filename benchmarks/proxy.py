"""The proxy's rows (issue 17): a ``tools/call`` round trip through ``launcher-probe proxy``
against the same call made directly (p50 and p99 overhead; floor: a bare relay of the same
framing), 10,000 notifications relayed, the peak RSS while a 32 MiB result passes and while
a 32 MiB call passes (one the proxy decodes), and the launcher check before each call
against P1. The proxy is the plain install's console script; every server process is closed
and reaped before ``rows`` returns."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Sequence
from contextlib import ExitStack

from benchmarks.core import MIB, Env, Row, batched, interleaved_medians, percentile, vm_hwm
from launcher_probe.proxy.capabilities import INSPECT_LIMIT

#: A trivial stdio MCP server on raw lines (standard library only): advertises the sandbox
#: capability; ``tools/call`` ``flood`` sends ``count`` notifications in one write first,
#: ``big`` answers ``size`` bytes of text, any other tool answers at once.
SERVER = r"""
import json, sys
out = sys.stdout.buffer
note = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":1}}\n'
for line in sys.stdin.buffer:
    message = json.loads(line)
    ident = json.dumps(message.get("id")).encode()
    method = message.get("method")
    if method == "initialize":
        out.write(b'{"jsonrpc":"2.0","id":' + ident + b',"result":{"protocolVersion":'
                  b'"2025-06-18","capabilities":{"experimental":{"codex/sandbox-state":{}}},'
                  b'"serverInfo":{"name":"bench","version":"0"}}}\n')
    elif method == "tools/call":
        params = message["params"]
        text = b""
        if params["name"] == "flood":
            out.write(note * params["arguments"]["count"])
        elif params["name"] == "big":
            text = b"x" * params["arguments"]["size"]
        out.write(b'{"jsonrpc":"2.0","id":' + ident + b',"result":{"content":[{"type":"text",'
                  b'"text":"' + text + b'"}]}}\n')
    out.flush()
"""
#: The floor: the proxy's two threads and framing, relaying every message as it is (no
#: launcher, no rewriting, no signals): ``python -c RELAY SERVER_ARGV...``.
RELAY = r"""
import subprocess, sys, threading
from launcher_probe.proxy.framing import pump
child = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
class PassedOn:
    def passes(self): return True
def relay(source, sink):
    pump(source, sink, lambda line: line, limit=1 << 30, long_messages=PassedOn())
def inbound():
    relay(0, child.stdin.fileno())
    child.stdin.close()
threading.Thread(target=inbound, daemon=True).start()
relay(child.stdout.fileno(), 1)
child.wait()
"""
INITIALIZE = (
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    b'"capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}\n'
)
CALL = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"noop","arguments":{}}}\n'
#: A call that the proxy decodes and rewrites, whose arguments hold a long string.
BIG_CALL = (
    b'{"jsonrpc":"2.0","id":4,"method":"tools/call",'
    b'"params":{"name":"noop","arguments":{"text":"%s"}}}\n'
)
NOTIFICATIONS = 10_000
BIG = 32 * MIB
#: Round trips per sample (the proxied server, the direct one and the bare relay in turn).
TRIPS = 100


class Served:
    """A server process (the proxy, or the server itself) driven over its stdio."""

    def __init__(self, argv: Sequence[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.write_fd, self.read_fd = self.process.stdin.fileno(), self.process.stdout.fileno()
        self.buffer = b""
        self.exchange(INITIALIZE)

    def read_line(self) -> bytes:
        while b"\n" not in self.buffer:
            chunk = os.read(self.read_fd, 1 << 20)
            if not chunk:
                raise SystemExit("the server closed its stdout")
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def exchange(self, request: bytes) -> bytes:
        """Send ``request``; the first line back that carries an ``"id"``."""
        os.write(self.write_fd, request)
        while b'"id"' not in (line := self.read_line()):
            pass
        return line

    def peak_rss(self) -> int:
        """``VmHWM`` of the process, in bytes."""
        peak = vm_hwm(self.process.pid)
        if peak is None:
            raise SystemExit("the proxy's peak RSS needs /proc (VmHWM)")
        return peak

    def close(self) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process.stdout.close()


def _round_trips(served: Served, times: list[float]) -> None:
    """``TRIPS`` round trips to ``served``, each one's time appended to ``times``."""
    for _ in range(TRIPS):
        start = time.perf_counter()
        served.exchange(CALL)
        times.append(time.perf_counter() - start)


def _flood(served: Served) -> None:
    """A call whose server sends ``NOTIFICATIONS`` notifications before its answer."""
    served.exchange(
        b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"flood",'
        b'"arguments":{"count":%d}}}\n' % NOTIFICATIONS
    )


def _launcher_check(codex: str, runs: int) -> tuple[float, float]:
    """Per call: the proxy's check of the bound launcher (the fingerprint replay), and P1."""
    from launcher_probe.host.decision import Published
    from launcher_probe.host.resolver import resolve_launcher

    decision = resolve_launcher(codex=codex)
    if not isinstance(decision, Published):
        raise SystemExit(f"{codex} was not published: {decision.reason}: {decision.detail}")

    def check() -> None:
        if not decision.fingerprint.still_matches():
            raise SystemExit("the binary changed during the bench")

    def hit() -> None:
        resolve_launcher(codex=codex)

    calls = 200
    checked, p1 = interleaved_medians([batched(check, calls), batched(hit, calls)], runs)
    return checked / calls, p1 / calls


def rows(env: Env, runs: int) -> list[Row]:
    """The proxy's rows: round trips in ``runs`` rounds (the proxy, the server direct and
    the bare relay interleaved), floods in fewer, then the 32 MiB result and the check."""
    server = [env.python, "-c", SERVER]
    with ExitStack() as stack:
        proxied = Served([env.cli, "proxy", "--codex", env.codex, "--", *server], env.env)
        stack.callback(proxied.close)
        direct = Served(server, env.env)
        stack.callback(direct.close)
        relayed_only = Served([env.python, "-c", RELAY, *server], env.env)
        stack.callback(relayed_only.close)
        through: list[float] = []
        straight: list[float] = []
        bare: list[float] = []
        interleaved_medians(
            [
                lambda: _round_trips(proxied, through),
                lambda: _round_trips(direct, straight),
                lambda: _round_trips(relayed_only, bare),
            ],
            runs,
        )
        relayed, unrelayed = interleaved_medians(
            [lambda: _flood(proxied), lambda: _flood(direct)], max(3, runs // 4)
        )
        idle = proxied.peak_rss()
        big = b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"big",'
        answer = proxied.exchange(big + b'"arguments":{"size":%d}}}\n' % BIG)
        if len(answer) < BIG:
            raise SystemExit("the 32 MiB result came back short")
        peak = proxied.peak_rss()
        calling = Served([env.cli, "proxy", "--codex", env.codex, "--", *server], env.env)
        stack.callback(calling.close)
        idle_calling = calling.peak_rss()
        calling.exchange(BIG_CALL % (b"x" * BIG))
        call_peak = calling.peak_rss()
    p50 = percentile(through, 0.5) - percentile(straight, 0.5)
    p99 = percentile(through, 0.99) - percentile(straight, 0.99)
    medians = (percentile(times, 0.5) * 1e6 for times in (through, straight))
    shown = "p50 proxied {:.0f} µs, direct {:.0f} µs".format(*medians)
    checked, p1 = _launcher_check(env.codex, runs)
    return [
        Row("proxy: tools/call overhead p50", p50, "150 µs", 150e-6, 1.0, note=shown),
        Row(
            "  floor: bare relay overhead p50",
            percentile(bare, 0.5) - percentile(straight, 0.5),
            "150 µs",
            150e-6,
            None,
            note="the proxy's threads and framing alone, no rewriting",
        ),
        Row(
            "proxy: tools/call overhead p99",
            p99,
            "500 µs",
            500e-6,
            1.0,
            note=f"p99 proxied {percentile(through, 0.99) * 1e6:.0f} µs, direct "
            f"{percentile(straight, 0.99) * 1e6:.0f} µs; {len(through):,} trips each",
        ),
        Row(
            f"proxy: {NOTIFICATIONS:,} notifications",
            relayed / NOTIFICATIONS,
            "goal",
            1 / 20_000,
            1.0,
            unit="/s",
            note=f"direct {NOTIFICATIONS / unrelayed:,.0f}/s",
        ),
        Row(
            "proxy: peak RSS growth, 32 MiB result",
            peak - idle,
            "what it reads of one",
            INSPECT_LIMIT,
            2.0,
            unit="MiB",
            note=f"VmHWM {peak / MIB:.1f} MiB, {idle / MIB:.1f} MiB before it; passed on unread",
        ),
        Row(
            "proxy: peak RSS, 32 MiB call",
            call_peak,
            "32 MiB",
            BIG,
            4.0,
            unit="MiB",
            note=f"a string argument, decoded and spliced; {idle_calling / MIB:.1f} MiB before it",
        ),
        Row(
            "proxy: launcher check per call",
            checked,
            "P1 memory hit",
            p1,
            1.0,
            note="the bound Decision's fingerprint replay",
        ),
    ]
