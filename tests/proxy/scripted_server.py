"""A stdio MCP server on raw JSON-RPC lines (the standard library only), scripted for the
proxy's tests. It writes every line it reads to ``--record FILE`` as it read it.

    python scripted_server.py [--capable] [--record FILE] [--daemon PIDFILE] [--ignore-eof]
        [--ignore-term] [--pidfile FILE]

- ``initialize`` and ``server/discover``: capabilities with ``codex/sandbox-state`` under
  ``experimental`` when ``--capable``, else none;
- ``tools/call`` by tool name: ``meta`` answers with the request's ``_meta``; ``big``
  answers with a text of ``arguments.size`` bytes; ``crash`` exits 7 without answering;
  ``ask`` sends a progress notification and a ``sampling/createMessage`` request to the
  client, and answers with the client's result; ``notify`` sends ``arguments.count``
  logging notifications, then answers; ``long`` answers with a text of ``arguments.size``
  bytes in pieces, and with ``arguments.pause`` bytes of it written, reads the next line
  (answering it after the text, when it is a ``ping``) before it writes the rest;
- ``resources/read``: its ``_meta``; ``ping``: ``{}``;
- ``notifications/cancelled``: answered with a logging notification naming the request.

``--daemon PIDFILE``: at start, a double-forked daemon that left the session and closed its
stdio writes its pid to PIDFILE and sleeps. ``--ignore-eof``: at stdin's end, sleep on.
``--ignore-term``: SIGTERM ignored (by the daemon too).
``--pidfile FILE``: its own pid, written at start. ``--instructions N``: its ``initialize``
and ``server/discover`` results hold ``instructions`` of N bytes.
It says ``scripted server: started`` on stderr.

It reads stdin in a ``select`` that a signal's wakeup fd ends: CPython runs a handler
(SIGINT's KeyboardInterrupt) between bytecodes, so a SIGINT that lands just before a plain
blocking read of stdin would wait for the next input; the proxy would then kill it after
the grace.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import select
import signal
import sys
import time
from collections.abc import Iterator
from typing import Any


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def start_daemon(pidfile: str) -> None:
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            with open(pidfile + ".tmp", "w") as stream:
                stream.write(str(os.getpid()))
            os.replace(pidfile + ".tmp", pidfile)
            time.sleep(600)
        os._exit(0)
    os.wait()
    while not os.path.exists(pidfile):
        time.sleep(0.001)


def stdin_lines() -> Iterator[bytes]:
    """stdin's lines as read (the last one may lack its newline); every wait for input
    also ends when a signal arrives, whose handler then runs."""
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write, warn_on_full_buffer=False)
    pending: list[bytes] = []  # a line's start, read so far (joined once: a long line)
    while True:
        ready = select.select([0, wake_read], [], [])[0]
        if wake_read in ready:
            os.read(wake_read, 512)  # a signal came: its handler runs before the next read
        if 0 not in ready:
            continue
        chunk = os.read(0, 1 << 16)
        if not chunk:
            break
        *lines, rest = chunk.split(b"\n")
        if lines:
            lines[0], pending = b"".join([*pending, lines[0]]), []
            yield from (line + b"\n" for line in lines)
        pending.append(rest)
    if any(pending):
        yield b"".join(pending)


def call(request: dict[str, Any], lines: Any) -> None:
    params = request.get("params") or {}
    name, arguments = params.get("name"), params.get("arguments") or {}
    answer: dict[str, Any]
    if name == "meta":
        answer = {"content": [], "structuredContent": {"meta": params.get("_meta")}}
    elif name == "big":
        answer = {"content": [{"type": "text", "text": "x" * int(arguments["size"])}]}
    elif name == "crash":
        os._exit(7)
    elif name == "ask":
        token = (params.get("_meta") or {}).get("progressToken")
        send(
            {"method": "notifications/progress", "params": {"progressToken": token, "progress": 1}}
        )
        send({"id": "from-server", "method": "sampling/createMessage", "params": {"messages": []}})
        reply = json.loads(next(lines))
        answer = {"content": [], "structuredContent": {"client": reply}}
    elif name == "long":
        long_answer(request["id"], int(arguments["size"]), arguments.get("pause"), lines)
        return
    elif name == "notify":
        for number in range(int(arguments["count"])):
            send({"method": "notifications/message", "params": {"level": "info", "data": number}})
        answer = {"content": []}
    else:
        send({"id": request["id"], "error": {"code": -32602, "message": f"no tool {name}"}})
        return
    send({"id": request["id"], "result": answer})


def long_answer(request_id: object, size: int, pause: int | None, lines: Any) -> None:
    """A text answer of ``size`` bytes, written 1 MiB at a time; with ``pause`` bytes of it
    written, the next line read (a ``ping`` answered after the text)."""
    head = {"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text"}]}}
    start, end = json.dumps(head).rsplit("}]}}", 1)
    pieces = [f'{start}, "text": "'.encode(), *[b"x" * (1 << 20)] * (size >> 20)]
    pieces += [b"x" * (size % (1 << 20)), f'"}}]}}}}{end}\n'.encode()]
    written, after = 0, None
    for piece in pieces:
        if pause is not None and written <= pause < written + len(piece):
            cut = pause - written
            sys.stdout.buffer.write(piece[:cut])
            sys.stdout.buffer.flush()
            after, piece, written = json.loads(next(lines)), piece[cut:], pause
        sys.stdout.buffer.write(piece)
        written += len(piece)
    sys.stdout.buffer.flush()
    if after is not None and after.get("method") == "ping":
        send({"id": after["id"], "result": {}})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--capable", action="store_true")
    parser.add_argument("--record")
    parser.add_argument("--daemon")
    parser.add_argument("--ignore-eof", action="store_true")
    parser.add_argument("--ignore-term", action="store_true")
    parser.add_argument("--pidfile")
    parser.add_argument("--instructions", type=int, default=0)
    args = parser.parse_args()
    if args.ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if args.pidfile:
        with open(args.pidfile, "w") as file:
            file.write(str(os.getpid()))
    with contextlib.suppress(OSError):  # a stderr nobody reads
        print("scripted server: started", file=sys.stderr, flush=True)
    if args.daemon:
        start_daemon(args.daemon)
    record = open(args.record, "ab", buffering=0) if args.record else None  # noqa: SIM115
    experimental: dict[str, Any] = {"codex/sandbox-state": {}} if args.capable else {}

    def lines() -> Any:
        for line in stdin_lines():
            if record is not None:
                record.write(line)
            yield line

    incoming = lines()
    for line in incoming:
        try:
            request = json.loads(line)
        except ValueError:
            send({"id": None, "error": {"code": -32700, "message": "parse error"}})
            continue
        method = request.get("method")
        if method in ("initialize", "server/discover"):
            result = {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}, "experimental": experimental},
                "serverInfo": {"name": "scripted", "version": "0"},
                **({"instructions": "i" * args.instructions} if args.instructions else {}),
            }
            send({"id": request["id"], "result": result})
        elif method == "tools/call":
            call(request, incoming)
        elif method == "resources/read":
            meta = (request.get("params") or {}).get("_meta")
            send({"id": request["id"], "result": {"contents": [], "meta": meta}})
        elif method in ("ping", "codex/sandbox-state/update") and "id" in request:
            send({"id": request["id"], "result": {}})
        elif method == "notifications/cancelled":
            cancelled = request["params"]["requestId"]
            send({"method": "notifications/message", "params": {"data": f"cancelled {cancelled}"}})
    if args.ignore_eof:
        time.sleep(600)


if __name__ == "__main__":
    main()
