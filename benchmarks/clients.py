"""Socket clients in processes of their own, and a bare echo server: the floor of a round
trip on this machine (the same clients, a server that only reads a line and writes one)."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Sequence

#: A client: for each command read on stdin, connect, time request/answer round trips, and
#: print their times as one JSON line. ``N``: N round trips, closed loop (each request sent
#: when the last is answered). ``RATE SECONDS``: open loop, a request due every 1/RATE s
#: for SECONDS, each timed from when it was due (so a stall is counted, not hidden).
#: Imports nothing of launcher_probe.
CLIENT = r"""
import json, socket, sys, time
path, line = sys.argv[1], sys.argv[2].encode() + b"\n"
print("ready", flush=True)
for command in sys.stdin:
    words = command.split()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    reader = s.makefile("rb")
    times = []
    if len(words) == 1:
        for _ in range(int(words[0])):
            start = time.perf_counter()
            s.sendall(line)
            answer = reader.readline()
            times.append(time.perf_counter() - start)
            if b'"ok":true' not in answer.replace(b" ", b""):
                sys.exit(f"answered {answer!r}")
    else:
        interval, seconds = 1.0 / float(words[0]), float(words[1])
        begin = due = time.perf_counter()
        while due - begin < seconds:
            now = time.perf_counter()
            if now < due:
                time.sleep(due - now)
            s.sendall(line)
            answer = reader.readline()
            times.append(time.perf_counter() - due)
            if b'"ok":true' not in answer.replace(b" ", b""):
                sys.exit(f"answered {answer!r}")
            due += interval
    s.close()
    print(json.dumps(times), flush=True)
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


class Clients:
    """``count`` client processes sending ``line`` to the socket ``path``."""

    def __init__(self, python: str, path: str, line: str, count: int) -> None:
        self.processes: list[subprocess.Popen[str]] = []
        for _ in range(count):
            self.processes.append(_started([python, "-I", "-S", "-c", CLIENT, path, line]))

    def round_trips(self, clients: int, count: int) -> tuple[list[float], float]:
        """``count`` round trips from each of the first ``clients`` clients at once, closed
        loop: every round trip's time, and the wall time until the last answer."""
        return self._run(clients, str(count))

    def open_loop(self, clients: int, rate: float, seconds: float) -> list[float]:
        """The first ``clients`` clients at once, open loop, offering ``rate`` requests per
        second in all for ``seconds``: every request's time from when it was due."""
        return self._run(clients, f"{rate / clients!r} {seconds!r}")[0]

    def _run(self, clients: int, command: str) -> tuple[list[float], float]:
        chosen = self.processes[:clients]
        start = time.perf_counter()
        for client in chosen:
            assert client.stdin is not None
            client.stdin.write(f"{command}\n")
            client.stdin.flush()
        times: list[float] = []
        for client in chosen:
            assert client.stdout is not None
            times += json.loads(client.stdout.readline())
        return times, time.perf_counter() - start

    def close(self) -> None:
        """End every client (closing stdin ends one; a stuck one is killed) and reap it."""
        for client in self.processes:
            if client.poll() is None:
                assert client.stdin is not None
                client.stdin.close()
                try:
                    client.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    client.kill()
                    client.wait()


class EchoServer:
    """The bare echo server on ``path``, answering every line with ``answer``."""

    def __init__(self, python: str, path: str, answer: str) -> None:
        self.process = _started([python, "-I", "-S", "-c", ECHO, path, answer])

    def close(self) -> None:
        self.process.kill()
        self.process.wait()
