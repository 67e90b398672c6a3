"""``wrap`` under a host that hands the server socket pairs (Node, Electron): the sandboxed
command gets pipes, copied outside the sandbox; and the two facts of Codex's sandbox that
docs/hosts.md states (socket calls denied on a socket pair, so an ``asyncio`` loop is never
woken from a thread), checked on the real CLI of every version."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from tests.fakes import FakeCodex
from tests.proxy.claude_code import ClaudeCode
from tests.proxy.test_wrap import NOTE, WRAP, wrap

#: What a Node server does before it reads a byte: libuv asks a socket stdio its name.
NODE_SERVER = r"""
const fs = require("fs");
console.error("node server up");
function answer(id, result) {
  process.stdout.write(JSON.stringify({jsonrpc: "2.0", id, result}) + "\n");
}
let pending = "";
process.stdin.on("data", (data) => {
  pending += data;
  let end;
  while ((end = pending.indexOf("\n")) >= 0) {
    const message = JSON.parse(pending.slice(0, end));
    pending = pending.slice(end + 1);
    if (message.method === "initialize") {
      answer(message.id, {protocolVersion: message.params.protocolVersion,
        capabilities: {tools: {}}, serverInfo: {name: "node-test", version: "0"}});
    } else if (message.method === "tools/list") {
      answer(message.id, {tools: [{name: "write", inputSchema: {type: "object",
        properties: {path: {type: "string"}}}}]});
    } else if (message.method === "tools/call") {
      let text = "written";
      try { fs.writeFileSync(message.params.arguments.path, "made\n"); }
      catch (error) { text = error.message; }
      answer(message.id, {content: [{type: "text", text}]});
    } else if (message.id !== undefined) {
      answer(message.id, {});
    }
  }
});
"""
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {}},
}


@pytest.fixture
def node() -> str:
    found = shutil.which("node")
    if found is None:
        pytest.skip("node is not installed")
    return found


@pytest.fixture
def marked(env: dict[str, str]) -> Iterator[dict[str, str]]:
    """``env`` with a mark of its own; every process started with it is gone at the end."""
    mark = uuid.uuid4().hex
    yield {**env, "LAUNCHER_PROBE_TEST_MARK": mark}
    assert _marked_processes(mark) == []


def _marked_processes(mark: str) -> list[psutil.Process]:
    def has_mark(process: psutil.Process) -> bool:
        try:
            return process.environ().get("LAUNCHER_PROBE_TEST_MARK") == mark
        except (psutil.Error, OSError):
            return False

    gone = psutil.wait_procs([p for p in psutil.process_iter() if has_mark(p)], timeout=10)
    return gone[1]


class SocketHost:
    """A host as libuv makes one: a socket pair for each of the server's fds 0 to 2."""

    def __init__(
        self,
        argv: list[str],
        env: dict[str, str],
        cwd: Path,
        *,
        stderr_on_stdout: bool = False,
        blocking: bool = True,
        ignoring_sigchld: bool = False,
    ) -> None:
        """``stderr_on_stdout``: one socket for both (``2>&1``); ``blocking``: the server's
        ends as libuv leaves them (False: non-blocking, as some hosts hand them);
        ``ignoring_sigchld``: the server starts with SIGCHLD ignored."""
        pairs = [socket.socketpair() for _ in range(3)]
        self.stdin, self.stdout, self.stderr = (ours for ours, _ in pairs)
        for _, their in pairs:
            their.setblocking(blocking)
        theirs = [their.fileno() for _, their in pairs]
        if stderr_on_stdout:
            theirs[2] = theirs[1]
        self.process = subprocess.Popen(
            argv, stdin=theirs[0], stdout=theirs[1], stderr=theirs[2], env=env, cwd=cwd,
            preexec_fn=_ignoring_sigchld if ignoring_sigchld else None,
        )  # fmt: skip
        for _, their in pairs:
            their.close()
        self.stdout.settimeout(60)
        self.stderr.settimeout(60)
        self.pending = b""

    def send(self, message: object) -> None:
        self.stdin.sendall(json.dumps(message).encode() + b"\n")

    def read(self) -> object:
        while b"\n" not in self.pending:
            chunk = self.stdout.recv(1 << 16)
            assert chunk, "the server closed its stdout"
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return json.loads(line)

    def said(self, text: bytes) -> None:
        """Read the server's stderr until ``text`` (a whole line) has come."""
        seen = b""
        while not seen.startswith(text) and b"\n" + text not in seen:
            chunk = self.stderr.recv(1 << 16)
            assert chunk, f"the server's stderr ended: {seen!r}"
            seen += chunk

    def close(self) -> int:
        """Close the host's ends (the server's stdin ends); its exit status."""
        for ours in (self.stdin, self.stdout, self.stderr):
            ours.close()
        return self.process.wait(60)

    def __enter__(self) -> SocketHost:
        return self

    def __exit__(self, *_: object) -> None:
        """On the way out of a failed test too: nothing of the server is left."""
        for ours in (self.stdin, self.stdout, self.stderr):
            ours.close()
        if self.process.poll() is None:
            below = psutil.Process(self.process.pid).children(recursive=True)
            for pid in (self.process.pid, *(process.pid for process in below)):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            self.process.wait()


def _ignoring_sigchld() -> None:
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)


def _all_of(stream: socket.socket, size: int = 1 << 16) -> bytes:
    """What ``stream`` gives until its end, read ``size`` bytes at a time."""
    received = b""
    while chunk := stream.recv(size):
        received += chunk
    return received


def _state(env: dict[str, str], cwd: Path, *options: str) -> str:
    return subprocess.run(
        [sys.executable, "-m", "launcher_probe", "proxy", *options, "--print-state"],
        env=env, cwd=cwd, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip


#: Each socket call a Node or asyncio server makes on a socket pair: its errno name, or ok.
SOCKET_CALLS = r"""
import errno, socket
ours, theirs = socket.socketpair()
for name, call in (("getsockname", ours.getsockname), ("send", lambda: ours.send(b"x")),
                   ("shutdown", lambda: ours.shutdown(socket.SHUT_WR))):
    try:
        call()
        print(name, "ok")
    except OSError as error:
        print(name, errno.errorcode[error.errno])
"""


SOCKET_CALLS_NAMED = ("getsockname", "send", "shutdown")


@pytest.mark.real_codex
@pytest.mark.parametrize(("options", "outcome"), [((), "EPERM"), (("--network",), "ok")])
def test_a_restricted_network_denies_socket_calls_on_a_socket_pair(
    env: dict[str, str], workspace: Path, real_codex: Path, options: tuple[str, ...], outcome: str
) -> None:
    state = _state(env, workspace, *options)
    argv = [str(real_codex), "sandbox", "--sandbox-state-json", state, "--"]
    done = subprocess.run(
        [*argv, sys.executable, "-I", "-S", "-c", SOCKET_CALLS],
        env=env, cwd=workspace, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert done.stdout.split("\n")[:3] == [f"{call} {outcome}" for call in SOCKET_CALLS_NAMED]


#: An asyncio loop handed a result by a thread (what the MCP SDK's stdio reader does):
#: whether that woke it, or only its own timer 3 s later.
WOKEN_FROM_A_THREAD = r"""
import asyncio, os, threading
async def main():
    loop = asyncio.get_running_loop()
    waiting = threading.Event()  # set as the loop goes to wait: the thread answers then
    loop.call_soon(waiting.set)
    started = loop.time()
    handed = loop.run_in_executor(None, waiting.wait)
    await asyncio.wait([handed], timeout=3)  # the timeout's timer wakes the loop
    print("woken" if loop.time() - started < 1.5 else "never woken", flush=True)
    os._exit(0)  # asyncio.run's end waits for the executor's thread to say it ended
asyncio.run(main())
"""


@pytest.mark.real_codex
@pytest.mark.parametrize(("options", "said"), [((), "never woken"), (("--network",), "woken")])
def test_an_asyncio_loop_is_woken_from_a_thread_only_with_the_network(
    env: dict[str, str], workspace: Path, real_codex: Path, options: tuple[str, ...], said: str
) -> None:
    command = [sys.executable, "-I", "-S", "-c", WOKEN_FROM_A_THREAD]
    done = wrap(env, workspace, "--codex", str(real_codex), *options, "--", *command)
    assert (done.returncode, done.stdout) == (0, f"{said}\n"), done.stderr


@pytest.mark.real_codex
def test_a_node_server_answers_a_host_that_gives_it_socket_pairs(
    marked: dict[str, str], workspace: Path, real_codex: Path, node: str
) -> None:
    argv = [*WRAP, "--codex", str(real_codex), "--", node, "-e", NODE_SERVER]
    with SocketHost(argv, marked, workspace) as host:
        host.send(INITIALIZE)
        assert host.read() == {
            "jsonrpc": "2.0",
            "id": 0,
            "result": {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "node-test", "version": "0"},
            },
        }
        host.said(b"node server up\n")
        call = {"name": "write", "arguments": {"path": str(workspace / "x")}}
        host.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call})
        assert "read-only file system" in json.dumps(host.read())
        assert not (workspace / "x").exists()
        assert host.close() == 0


@pytest.mark.real_codex
def test_bytes_pass_unchanged_both_ways_and_nothing_is_left(
    marked: dict[str, str], workspace: Path, real_codex: Path
) -> None:
    """A MiB and an unterminated line through ``cat``: the same bytes back, in order; the
    host's half-close ends the command's stdin, its exit ends the host's stdout, and the
    copiers are gone with them (``marked``)."""
    argv = [*WRAP, "--codex", str(real_codex), "--", "cat"]
    sent = os.urandom(1 << 20).replace(b"\n", b"") + b"\nno newline at the end"
    with SocketHost(argv, marked, workspace) as host:

        def send() -> None:  # while the host reads: cat answers before it reads all
            host.stdin.sendall(sent)
            host.stdin.shutdown(socket.SHUT_WR)

        sender = threading.Thread(target=send)
        sender.start()
        received = _all_of(host.stdout)
        sender.join()
        assert received == sent
        assert host.close() == 0


@pytest.mark.real_codex
def test_the_mcp_inspector_runs_a_wrapped_node_server(
    marked: dict[str, str], workspace: Path, real_codex: Path, mcp_inspector: Path, node: str
) -> None:
    """A Node host no one here wrote, starting the server through ``wrap`` (it drops the
    ``--``): the server answers; under read-only its write fails, under workspace-write
    it lands."""
    server = workspace.parent / "server.js"
    server.write_text(NODE_SERVER)
    target = workspace / "made.txt"
    for sandbox, expected in (("read-only", "read-only file system"), ("workspace-write",
                              "written")):  # fmt: skip
        argv = [str(mcp_inspector), "--cli", *WRAP, "--codex", str(real_codex)]
        argv += ["--sandbox", sandbox, node, str(server)]
        argv += ["--method", "tools/call", "--tool-name", "write", "--tool-arg", f"path={target}"]
        path = f"{os.path.dirname(node)}:{marked['PATH']}"
        done = subprocess.run(
            argv, env={**marked, "PATH": path}, cwd=workspace,
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert expected in json.loads(done.stdout)["content"][0]["text"]
        assert target.exists() == (sandbox == "workspace-write")
    assert target.read_text() == "made\n"


@pytest.mark.real_codex
def test_stdout_and_stderr_on_one_socket_keep_their_order(
    marked: dict[str, str], workspace: Path, real_codex: Path
) -> None:
    """``2>&1`` from the host: one pipe and one copier for both, so the lines come in the
    order the command wrote them."""
    script = "for i in $(seq 300); do echo o$i; echo e$i >&2; done"
    argv = [*WRAP, "--codex", str(real_codex), "--", "sh", "-c", script]
    with SocketHost(argv, marked, workspace, stderr_on_stdout=True) as host:
        host.stdin.shutdown(socket.SHUT_WR)
        lines = _all_of(host.stdout).decode().splitlines()
        assert host.close() == 0
    written = [line for line in lines if not line.startswith("WARNING: ")]  # Codex's own
    assert written == [f"{stream}{i}" for i in range(1, 301) for stream in "oe"]


@pytest.mark.real_codex
def test_a_non_blocking_socket_loses_nothing(
    marked: dict[str, str], workspace: Path, real_codex: Path
) -> None:
    """A host that hands non-blocking sockets, read slowly: the copier waits for room."""
    argv = [*WRAP, "--codex", str(real_codex), "--", "head", "-c", str(4 << 20), "/dev/zero"]
    with SocketHost(argv, marked, workspace, blocking=False) as host:
        assert len(_all_of(host.stdout, 1024)) == 4 << 20
        assert host.close() == 0


@pytest.mark.real_codex
def test_a_host_that_ignores_sigchld(
    marked: dict[str, str], workspace: Path, real_codex: Path
) -> None:
    """A host's ignored SIGCHLD would have the kernel reap what the command starts before
    it is waited for: the probe (a cache never used), the copier's first fork, what
    ``codex sandbox`` starts. The command puts it at its default for its run."""
    argv = [*WRAP, "--codex", str(real_codex), "--", "echo", "served"]
    with SocketHost(argv, marked, workspace, ignoring_sigchld=True) as host:
        assert _all_of(host.stdout) == b"served\n"
        assert host.close() == 0


def _listening(path: Path) -> socket.socket:
    listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listening.bind(str(path))
    listening.listen()
    return listening


@pytest.mark.real_codex
@pytest.mark.parametrize(
    "made",
    [
        _listening,
        lambda _: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM),  # never connected
        lambda _: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM),
    ],
    ids=["listening", "unconnected", "datagram"],
)
def test_a_socket_that_is_no_connected_stream_is_handed_on_as_it_is(
    marked: dict[str, str],
    workspace: Path,
    tmp_path: Path,
    real_codex: Path,
    made: Callable[[Path], socket.socket],
) -> None:
    """Only a connected stream socket becomes a pipe: another one (a listening one for
    socket activation, say) reaches the command itself."""
    given = made(tmp_path / "given.sock")
    ours, theirs = socket.socketpair()
    command = ["sh", "-c", "readlink /proc/self/fd/0 /proc/self/fd/1"]
    process = subprocess.Popen(
        [*WRAP, "--codex", str(real_codex), "--", *command],
        stdin=given.fileno(), stdout=theirs.fileno(), env=marked, cwd=workspace,
    )  # fmt: skip
    given.close()
    theirs.close()
    ours.settimeout(60)
    shown = _all_of(ours).decode().split()
    ours.close()
    assert process.wait(60) == 0
    assert [kind.split(":")[0] for kind in shown] == ["socket", "pipe"]


#: A host's own Python process running ``wrap`` whose exec fails (the argument list is
#: too long): its fd 1, a socket, is that socket again afterwards.
IN_PROCESS_HOST = r"""
import os, socket, sys
from launcher_probe.cli import main
ours, theirs = socket.socketpair()
os.dup2(theirs.fileno(), 1)
status = main(["wrap", "--codex", sys.argv[1], "--", "true", "x" * 300_000])
print(status, os.readlink("/proc/self/fd/1").split(":")[0], file=sys.stderr)
"""


@pytest.mark.real_codex
def test_a_failed_exec_puts_the_hosts_sockets_back(
    marked: dict[str, str], workspace: Path, real_codex: Path
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", IN_PROCESS_HOST, str(real_codex)],
        env=marked, cwd=workspace, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert "Argument list too long" in done.stderr
    assert done.stderr.splitlines()[-1] == "4 socket"


#: Run as a user of its own with its stdin and stdout the test's sockets: warms that user's
#: cache (the probe forks), limits that user's tasks to those it has plus ``allowed``, then
#: runs ``wrap`` in process (it returns when it cannot start a copier); says on stderr the
#: status, what fds 0 and 1 are then, and how many of its processes are left once those
#: that could end did (a copier started ends when wrap closes its pipe, while this lives).
COPIER_FORK_FAILS = r"""
import os, resource, sys
import psutil
codex, allowed, private = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def others():
    mine = psutil.process_iter(["uids"])
    return [p for p in mine if p.info["uids"].real == os.getuid() and p.pid != os.getpid()]
os.mkdir(private, 0o700)
for name in ("HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR"):
    os.environ[name] = os.path.join(private, name.lower())
    os.mkdir(os.environ[name], 0o700)
from launcher_probe.cli import main
assert main(["resolve", "--codex", codex]) == 0
assert psutil.wait_procs(others(), timeout=10)[1] == []  # the probe's, reaped
tasks = len(os.listdir("/proc/self/task"))  # this user's only process
resource.setrlimit(resource.RLIMIT_NPROC, (tasks + allowed, tasks + allowed))
status = main(["wrap", "--codex", codex, "--", "true"])
left = psutil.wait_procs(others(), timeout=10)[1]
fds = [os.readlink(f"/proc/self/fd/{fd}") for fd in (0, 1)]
print(status, *fds, len(left), file=sys.stderr)
"""


def _unused_uid() -> int:
    """A uid no process has (RLIMIT_NPROC counts that user's tasks)."""
    taken = {process.info["uids"].real for process in psutil.process_iter(["uids"])}
    return next(uid for uid in range(60_000, 61_000) if uid not in taken)


FORK_FAILED = "cannot give the command pipes for its stdio: [Errno 11] "


@pytest.mark.parametrize(
    ("allowed", "said"),
    [  # the first fork of stdin's copier; stdin's copier, forked by its intermediate;
        # stdout's, stdin's started (and ended: its pipe closed)
        (0, f"{FORK_FAILED}Resource temporarily unavailable"),
        (1, f"{FORK_FAILED}cannot start a copier process (Resource temporarily unavailable)"),
        (2, f"{FORK_FAILED}cannot start a copier process (Resource temporarily unavailable)"),
    ],
)
def test_a_copier_that_cannot_be_forked_fails_wrap_with_no_fd_changed(
    env: dict[str, str], tmp_path: Path, fake_codex: FakeCodex, allowed: int, said: str
) -> None:
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("needs root and setpriv: root's own forks ignore RLIMIT_NPROC")
    uid = _unused_uid()
    as_user = [setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
               "--inh-caps=+dac_override", "--ambient-caps=+dac_override"]  # fmt: skip
    stdin, their_stdin = socket.socketpair()
    stdout, their_stdout = socket.socketpair()
    argv = [*as_user, sys.executable, "-c", COPIER_FORK_FAILS, str(fake_codex.path)]
    with stdin, stdout, their_stdin, their_stdout:
        done = subprocess.run(
            [*argv, str(allowed), str(tmp_path / "private")],
            stdin=their_stdin.fileno(), stdout=their_stdout.fileno(), stderr=subprocess.PIPE,
            env=env, text=True, timeout=120, check=False,
        )  # fmt: skip
        sockets = [f"socket:[{os.fstat(s.fileno()).st_ino}]" for s in (their_stdin, their_stdout)]
    assert done.returncode == 0, done.stderr
    *_, message, report = done.stderr.splitlines()
    assert message == f"launcher-probe: {said}"
    assert report.split() == ["4", *sockets, "0"]  # no fd changed, no copier left


@pytest.mark.real_codex
def test_claude_code_runs_wrapped_servers_and_logs_why_one_never_answers(
    marked: dict[str, str], workspace: Path, real_codex: Path, claude_code: Path, node: str
) -> None:
    """Claude Code itself as the host (it gives a stdio server socket pairs): a wrapped
    Node server answers, its stderr in Claude Code's log; a wrapped server on the Python MCP
    SDK answers with --network and never without, and Claude Code's log of it holds the
    note that says why. Claude Code stops each (SIGINT), and nothing is left (``marked``)."""
    server = workspace.parent / "server.js"
    server.write_text(NODE_SERVER)
    python_server = [sys.executable, "-m", "launcher_probe.examples.shell_server"]
    wrapped = [*WRAP, "--codex", str(real_codex)]
    host = ClaudeCode(claude_code, marked, workspace)
    host.add("node", [*wrapped, "--", node, str(server)])
    host.add("python-networked", [*wrapped, "--network", "--", *python_server])
    host.add("python", [*wrapped, "--", *python_server])
    assert host.status("node") == "✔ Connected"
    assert host.status("python-networked") == "✔ Connected"
    assert host.status("python", timeout_ms=5_000) == "✘ Failed to connect"
    assert any(f"{NOTE}\n" in entry for entry in host.server_log("python"))
    node_log = host.server_log("node")  # its stderr reached Claude Code, without a note
    assert any("node server up\n" in entry for entry in node_log)
    assert not any("launcher-probe: note: " in entry for entry in node_log)
