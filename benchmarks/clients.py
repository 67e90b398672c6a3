"""Socket clients in processes of their own (closed loop: a process each; open loop: one
process holding every connection), and a bare echo server: the floor of a round trip on
this machine (the same clients, a server that only reads a line and writes one)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Sequence
from typing import Any

#: A client: for each count N read on stdin, connect, time N request/answer round trips,
#: closed loop (each request sent when the last is answered), and print their times as one
#: JSON line. Imports nothing of launcher_probe.
CLIENT = r"""
import json, socket, sys, time
path, line = sys.argv[1], sys.argv[2].encode() + b"\n"
print("ready", flush=True)
for command in sys.stdin:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    reader = s.makefile("rb")
    times = []
    for _ in range(int(command)):
        start = time.perf_counter()
        s.sendall(line)
        answer = reader.readline()
        times.append(time.perf_counter() - start)
        if b'"ok":true' not in answer.replace(b" ", b""):
            sys.exit(f"answered {answer!r}")
    s.close()
    print(json.dumps(times), flush=True)
"""
#: The open-loop client: one process holding ``argv[3]`` connections, so that what is timed
#: is the server and not that many sleeping processes waking each other on two cores. Each
#: connection's first round trip (the server checks its peer then) is not timed. For each
#: ``RATE SECONDS`` read on stdin, request k is due at ``k / RATE`` s from the start, on
#: connection k mod the count, and is sent then even when the one before it on that
#: connection is unanswered (requests are lines): the offered rate never waits for an
#: answer. Each answer is timed from when its request was due, so a stall of the server or
#: of this client is counted, not hidden (a server that stops reading holds up the sends,
#: which then count as late; 30 s of that, or of no answer, end it with an error). It waits
#: in select(2), whose timeout is in µs
#: (epoll's is rounded up to a whole ms, which alone would make requests up to 1 ms late),
#: and prints ``{"times": [...], "late": [...]}``: ``late``, how long after its due time
#: each request was sent (the client's own share). Imports nothing of launcher_probe.
OPEN_LOOP = r"""
import collections, json, selectors, socket, sys, time
path, line, count = sys.argv[1], sys.argv[2].encode() + b"\n", int(sys.argv[3])
selector = selectors.SelectSelector()
connections = []
for index in range(count):
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.settimeout(30.0)  # a server that stops reading or answering: an error, no hang
    connection.connect(path)
    selector.register(connection, selectors.EVENT_READ, index)
    connections.append(connection)
    connection.sendall(line)  # untimed: a connection's first answer costs the peer check
    first = b""
    while not first.endswith(b"\n"):
        first += connection.recv(65536) or sys.exit("the server closed a connection")
    if b'"ok":true' not in first.replace(b" ", b""):
        sys.exit(f"answered {first!r}")
print("ready", flush=True)
for command in sys.stdin:
    rate, seconds = (float(word) for word in command.split())
    total, interval = int(rate * seconds), 1.0 / rate
    due = [collections.deque() for _ in connections]
    pending = [b""] * count
    times, late = [], []
    sent = answered = 0
    begin = time.perf_counter()
    while answered < total:
        now = time.perf_counter()
        while sent < total and begin + sent * interval <= now:
            at = begin + sent * interval
            connections[sent % count].sendall(line)
            late.append(time.perf_counter() - at)
            due[sent % count].append(at)
            sent += 1
        if sent < total:
            events = selector.select(max(0.0, begin + sent * interval - time.perf_counter()))
        else:
            events = selector.select(30.0)
            if not events:
                sys.exit(f"{total - answered} requests unanswered for 30 s")
        for key, _ in events:
            data = key.fileobj.recv(65536)
            arrived = time.perf_counter()
            if not data:
                sys.exit("the server closed a connection")
            index = key.data
            answers = (pending[index] + data).split(b"\n")
            pending[index] = answers.pop()
            for answer in answers:
                if b'"ok":true' not in answer.replace(b" ", b""):
                    sys.exit(f"answered {answer!r}")
                times.append(arrived - due[index].popleft())
            answered += len(answers)
    print(json.dumps({"times": times, "late": late}), flush=True)
"""
#: One thread, ``selectors`` (as the helper's loop): every line read is answered with
#: ``answer`` (argv[2]), unparsed.
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


def _started(argv: Sequence[str]) -> subprocess.Popen[str]:
    process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    if process.stdout.readline() != "ready\n":
        process.kill()
        process.wait()
        raise SystemExit(f"{argv[:3]} did not start")
    return process


def _send(client: subprocess.Popen[str], command: str) -> None:
    assert client.stdin is not None
    client.stdin.write(f"{command}\n")
    client.stdin.flush()


def _reported(client: subprocess.Popen[str]) -> Any:
    """The JSON line a client printed; SystemExit, with its exit status, when it ended
    instead (what it said is on the bench's stderr)."""
    assert client.stdout is not None
    line = client.stdout.readline()
    if not line:
        raise SystemExit(f"a benchmark client ended with status {client.wait()}")
    return json.loads(line)


def _ended(client: subprocess.Popen[str]) -> None:
    """Closing stdin ends a client; a stuck one is killed. Reaped either way."""
    if client.poll() is None:
        assert client.stdin is not None
        client.stdin.close()
        try:
            client.wait(timeout=30)
        except subprocess.TimeoutExpired:
            client.kill()
            client.wait()


class Clients:
    """``count`` client processes sending ``line`` to the socket ``path``."""

    def __init__(self, python: str, path: str, line: str, count: int) -> None:
        self.processes: list[subprocess.Popen[str]] = []
        try:
            for _ in range(count):
                self.processes.append(_started([python, "-I", "-S", "-c", CLIENT, path, line]))
        except BaseException:  # the ones started already go too: nobody else holds them
            self.close()
            raise

    def round_trips(self, clients: int, count: int) -> tuple[list[float], float]:
        """``count`` round trips from each of the first ``clients`` clients at once, closed
        loop: every round trip's time, and the wall time until the last answer."""
        return self._run(clients, str(count))

    def _run(self, clients: int, command: str) -> tuple[list[float], float]:
        chosen = self.processes[:clients]
        start = time.perf_counter()
        for client in chosen:
            _send(client, command)
        times: list[float] = []
        for client in chosen:
            times += _reported(client)
        return times, time.perf_counter() - start

    def close(self) -> None:
        """End every client and reap it."""
        for client in self.processes:
            _ended(client)


class OpenLoop:
    """The open-loop client (``OPEN_LOOP``): ``count`` connections to the socket ``path``,
    each sending ``line``."""

    def __init__(self, python: str, path: str, line: str, count: int) -> None:
        self.process = _started([python, "-I", "-S", "-c", OPEN_LOOP, path, line, str(count)])

    def offer(self, rate: float, seconds: float) -> tuple[list[float], list[float]]:
        """``rate`` requests per second in all for ``seconds``: each one's time from when it
        was due to its answer, and how late the client itself sent each."""
        _send(self.process, f"{rate!r} {seconds!r}")
        found = _reported(self.process)
        return found["times"], found["late"]

    def close(self) -> None:
        """End the client and reap it."""
        _ended(self.process)


class EchoServer:
    """The bare echo server on ``path``, answering every line with ``answer``; its socket
    is removed when it is closed (a section measured again binds the path anew)."""

    def __init__(self, python: str, path: str, answer: str) -> None:
        self.path = path
        self.process = _started([python, "-I", "-S", "-c", ECHO, path, answer])

    def close(self) -> None:
        self.process.kill()
        self.process.wait()
        os.unlink(self.path)
