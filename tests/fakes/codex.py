"""A fake Codex CLI for tests: a real executable with switchable faults.

Installed by ``tests.fakes.install_fake_codex`` as ``DIR/NAME.fake.py`` with an
absolute ``#!python`` shebang, run by the native launcher ``DIR/NAME``
(``tests/fakes/launcher.c``), or in the script form as ``DIR/NAME`` itself; ``NAME``
(after resolving symlinks) is "the installed file" below. It uses only the standard
library. It never reads the environment for its configuration (a probe runs it with a
minimal one): every side file lives beside the installed file:

- ``NAME.fault.json``  ``{"fault": F, "params": {...}}`` or absent (no fault);
- ``NAME.calls``       one JSON array per invocation: its arguments after the
  program name, appended with a single O_APPEND write *before* any fault acts;
- ``NAME.context``     one JSON object per invocation, in the same order: its
  ``env``, ``pid``, ``ppid``, session id ``sid`` and ``stdin`` (``devnull``, ``closed``
  or ``other``);
- ``NAME.pids``        pids of grandchildren spawned by ``hang``, one a line;
- ``NAME.daemons``     pids of the daemons started by ``double_fork_daemon``, one a line;
- ``NAME.replaced``    one line per self-replacement done by ``replace_self``.

Without a fault:

- ``--version`` prints ``codex-cli 0.169.0``;
- ``sandbox --sandbox-state-json J [--sandbox-state-readable-root R]...
  [--sandbox-state-disable-network] -- CMD...`` checks that J is a JSON object
  with ``permissionProfile`` and a ``file:`` ``sandboxCwd`` (else ``Error:
  invalid --sandbox-state-json value: ...``, exit 1), chdirs there and execs CMD
  *unsandboxed* with ``IS_SANDBOX=yes``;
- anything else is a clap-style usage error, exit 2.

Faults (``params`` in brackets; the ``step`` param, ``version``, ``sandbox`` or
``any``, says which invocation the fault hits, default in parentheses; ``hang``,
``slow_start``, ``crash``, ``flood`` and ``exit_status`` work at any step):

- ``hang`` [orphan=False, escape=False] (sandbox): spawns a grandchild in its own
  session that keeps stdout open (its pid goes to ``NAME.pids``), then sleeps
  forever; with ``orphan``, the grandchild stays in the fake's process group and
  the fake answers normally and exits, leaving the grandchild holding stdout;
  with ``escape`` too, that orphan has its own session (no group or tree leads
  to it, only the pipe it holds);
- ``slow_start`` [seconds=5, gate=None] (any): sleeps ``seconds`` first, or,
  with ``gate`` (a path), until that file exists but at most ``seconds``;
- ``crash`` [signal=SIGKILL] (sandbox): kills itself with that signal;
- ``wrong_version`` [text] (version): prints other text, exit 0;
- ``no_sandbox`` [flag=False] (sandbox): clap error ``unrecognized subcommand
  'sandbox'`` (or, with ``flag``, ``unexpected argument '--sandbox-state-json'``), exit 2;
- ``state_rejected`` (sandbox): ``Error: invalid --sandbox-state-json value: ...``, exit 1;
- ``sandbox_broken`` (sandbox): a bubblewrap start-up error on stderr, exit 1;
- ``bwrap_missing`` (sandbox): Codex's panic when a single-file install finds no
  bubblewrap (no system ``bwrap``, no ``codex-resources/bwrap`` beside it), exit 101;
- ``flood`` [megabytes=100] (sandbox): writes that much to stdout, exit 0;
- ``exit_status`` [code=1] (sandbox): exits with ``code`` without running CMD;
- ``wrong_nonce`` (sandbox): prints a different random nonce, exit 0;
- ``noise`` (sandbox): runs CMD and wraps its stdout in extra lines, exit 0;
- ``pretend`` (sandbox): runs nothing and prints the last word of CMD (where the
  probe puts its nonce), exit 0: as if every write were blocked, yet it succeeds;
- ``replace_self`` [times=1] (sandbox): on each of the first ``times`` sandbox
  invocations, atomically replaces the installed file by a fresh copy (new inode)
  before answering normally;
- ``double_fork_daemon`` [hang=False, ready=None] (any): starts a daemon the classic
  way (fork, ``setsid``, fork, the middle one exits) that closes every descriptor and
  sleeps forever, ``launcher-probe-test-daemon`` and the installed file's path ending
  its argv; once its pid is in ``NAME.daemons`` and it runs that argv, the fake answers
  normally or, with ``hang``, sleeps forever; with ``ready`` (a FIFO), it first writes
  one line to it.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import unquote, urlsplit

VERSION = "codex-cli 0.169.0"
DEFAULT_STEPS = {
    "hang": "sandbox",
    "slow_start": "any",
    "crash": "sandbox",
    "wrong_version": "version",
    "no_sandbox": "sandbox",
    "state_rejected": "sandbox",
    "sandbox_broken": "sandbox",
    "bwrap_missing": "sandbox",
    "flood": "sandbox",
    "exit_status": "sandbox",
    "wrong_nonce": "sandbox",
    "noise": "sandbox",
    "pretend": "sandbox",
    "replace_self": "sandbox",
    "double_fork_daemon": "any",
}
#: In the argv of every daemon ``double_fork_daemon`` starts.
DAEMON_MARKER = "launcher-probe-test-daemon"
USAGE = "Usage: codex [OPTIONS] [PROMPT]\n       codex [OPTIONS] <COMMAND> [ARGS]\n"
SANDBOX_USAGE = "Usage: codex sandbox [OPTIONS] [COMMAND]... [COMMAND]\n"
MORE = "\nFor more information, try '--help'.\n"
#: What Codex 0.169.0 and 0.171.0 print (then exit 101) when they find no bubblewrap.
NO_BWRAP_PANIC = (
    "\nthread 'main' ({pid}) panicked at linux-sandbox/src/launcher.rs:68:13:\n"
    "bubblewrap is unavailable: no system bwrap was found on PATH and no bundled "
    "codex-resources/bwrap binary was found next to the Codex executable\n"
    "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n"
)

#: Ends the name of the Python fake that a native launcher runs.
SCRIPT_SUFFIX = ".fake.py"
#: The installed file: the native launcher, or the script itself in the script form.
SELF = Path(os.path.realpath(__file__).removesuffix(SCRIPT_SUFFIX))


def side_file(suffix: str) -> Path:
    return SELF.with_name(f"{SELF.name}.{suffix}")


def append_line(path: Path, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def context() -> dict[str, Any]:
    """What this invocation was started with, for the probe's hygiene tests."""
    try:
        same = os.path.samestat(os.fstat(0), os.stat(os.devnull))
        stdin = "devnull" if same else "other"
    except OSError:
        stdin = "closed"
    return {
        "env": dict(os.environ),
        "pid": os.getpid(),
        "ppid": os.getppid(),
        "sid": os.getsid(0),
        "stdin": stdin,
    }


def load_fault() -> tuple[str | None, dict[str, Any]]:
    try:
        config = json.loads(side_file("fault.json").read_text())
    except FileNotFoundError:
        return None, {}
    return config.get("fault"), dict(config.get("params") or {})


def fail(message: str, code: int) -> NoReturn:
    sys.stderr.write(message)
    sys.stderr.flush()
    os._exit(code)


def usage_error(message: str, usage: str = USAGE) -> NoReturn:
    fail(f"error: {message}\n\n{usage}{MORE}", 2)


def state_error(message: str) -> NoReturn:
    fail(f"Error: invalid --sandbox-state-json value: {message}\n", 1)


def spawn_grandchild(own_session: bool) -> None:
    grandchild = subprocess.Popen(
        [sys.executable, "-c", "import time\nwhile True: time.sleep(60)"],
        stdin=subprocess.DEVNULL,
        start_new_session=own_session,
    )
    append_line(side_file("pids"), str(grandchild.pid))


def hang() -> NoReturn:
    spawn_grandchild(own_session=True)
    while True:
        time.sleep(60)


def double_fork_daemon() -> None:
    """Start a daemon that leaves this process's tree, session and pipes; return once its
    pid is recorded."""
    started, report = os.pipe()
    middle = os.fork()
    if middle == 0:
        os.setsid()
        if os.fork() != 0:
            os._exit(0)
        append_line(side_file("daemons"), str(os.getpid()))
        os.closerange(0, started)
        os.closerange(started + 1, report)
        os.closerange(report + 1, 65536)
        os.close(started)
        # The sleeper closes ``report`` once started: then it holds nothing, and the fake
        # reads end of file.
        os.set_inheritable(report, True)
        sleeper = f"import os, time\nos.close({report})\nwhile True: time.sleep(60)"
        os.execv(sys.executable, [sys.executable, "-c", sleeper, DAEMON_MARKER, str(SELF)])
    os.close(report)
    os.waitpid(middle, 0)
    os.read(started, 1)  # end of file: the daemon recorded its pid and runs, holding nothing
    os.close(started)


def signal_ready(fifo: str) -> None:
    with open(fifo, "w") as stream:
        stream.write("ready\n")


def slow_start(params: dict[str, Any]) -> None:
    deadline = time.monotonic() + float(params.get("seconds", 5))
    gate = params.get("gate")
    while time.monotonic() < deadline:
        if gate is not None and os.path.exists(gate):
            return
        time.sleep(0.01 if gate is not None else max(deadline - time.monotonic(), 0.0))


def flood(megabytes: int) -> NoReturn:
    chunk = b"x" * (1 << 20)
    for _ in range(megabytes):
        os.write(1, chunk)
    os._exit(0)


def replace_self(times: int) -> None:
    done = side_file("replaced")
    count = len(done.read_text().splitlines()) if done.exists() else 0
    if count >= times:
        return
    fd, temporary = tempfile.mkstemp(dir=SELF.parent, prefix=f".{SELF.name}.")
    os.close(fd)
    shutil.copy2(SELF, temporary)
    os.replace(temporary, SELF)
    append_line(done, str(count + 1))


def parse_sandbox(args: list[str]) -> tuple[dict[str, Any], list[str]]:
    """Parse ``sandbox`` arguments like clap would; return the state and the command."""
    state_text: str | None = None
    index = 0
    while index < len(args) and args[index] != "--":
        arg = args[index]
        if arg == "--sandbox-state-json" and index + 1 < len(args):
            state_text = args[index + 1]
            index += 2
        elif arg == "--sandbox-state-readable-root" and index + 1 < len(args):
            index += 2
        elif arg == "--sandbox-state-disable-network":
            index += 1
        else:
            usage_error(f"unexpected argument '{arg}' found", SANDBOX_USAGE)
    command = args[index + 1 :]
    if state_text is None:
        fail("Error: the fake codex needs --sandbox-state-json\n", 1)
    try:
        state = json.loads(state_text)
    except ValueError as error:
        state_error(str(error))
    if not isinstance(state, dict):
        state_error("invalid type: expected struct SandboxState")
    if "permissionProfile" not in state:
        state_error("missing field `permissionProfile`")
    cwd = state.get("sandboxCwd")
    if not isinstance(cwd, str) or not cwd.startswith("file:"):
        state_error("invalid URI: relative URL without a base")
    if not command:
        fail("Error: sandbox command must not be empty\n", 1)
    return state, command


def run_sandbox(args: list[str], fault: str | None, params: dict[str, Any]) -> NoReturn:
    if fault == "no_sandbox":
        if params.get("flag"):
            usage_error("unexpected argument '--sandbox-state-json' found", SANDBOX_USAGE)
        usage_error("unrecognized subcommand 'sandbox'")
    if fault == "state_rejected":
        state_error("data did not match any variant of untagged enum PermissionProfileDe")
    if fault == "sandbox_broken":
        fail("bwrap: No permissions to create a new namespace\n", 1)
    if fault == "bwrap_missing":
        fail(NO_BWRAP_PANIC.format(pid=os.getpid()), 101)
    if fault == "wrong_nonce":
        sys.stdout.write(secrets.token_hex(16))
        sys.stdout.flush()
        os._exit(0)
    if fault == "replace_self":
        replace_self(int(params.get("times", 1)))
    state, command = parse_sandbox(args)
    if fault == "pretend":
        sys.stdout.write(command[-1].split()[-1])
        sys.stdout.flush()
        os._exit(0)
    os.chdir(unquote(urlsplit(state["sandboxCwd"]).path))
    env = dict(os.environ, IS_SANDBOX="yes")
    if fault == "noise":
        ran = subprocess.run(command, env=env, stdout=subprocess.PIPE, check=False)
        sys.stdout.buffer.write(b"noise before\n" + ran.stdout + b"\nnoise after\n")
        sys.stdout.flush()
        os._exit(ran.returncode)
    try:
        os.execvpe(command[0], command, env)
    except OSError as error:
        fail(f"Error: {error.strerror} (os error {error.errno})\n", 1)


def main(args: list[str]) -> NoReturn:
    append_line(side_file("calls"), json.dumps(args))
    append_line(side_file("context"), json.dumps(context()))
    fault, params = load_fault()
    step = "version" if args == ["--version"] else "sandbox" if args[:1] == ["sandbox"] else ""
    if fault is not None and params.get("step", DEFAULT_STEPS.get(fault)) not in (step, "any"):
        fault = None
    if fault == "slow_start":
        slow_start(params)
    if fault == "double_fork_daemon":
        double_fork_daemon()
        if params.get("ready"):
            signal_ready(params["ready"])
        while params.get("hang"):
            time.sleep(60)
    if fault == "hang":
        if not params.get("orphan"):
            hang()
        spawn_grandchild(own_session=bool(params.get("escape")))
    if fault == "crash":
        os.kill(os.getpid(), int(params.get("signal", signal.SIGKILL)))
    if fault == "flood":
        flood(int(params.get("megabytes", 100)))
    if fault == "exit_status":
        os._exit(int(params.get("code", 1)))
    if step == "version":
        if fault == "wrong_version":
            print(params.get("text", "not the codex you are looking for 1.0"))
        else:
            print(VERSION)
        sys.stdout.flush()
        os._exit(0)
    if step == "sandbox":
        run_sandbox(args[1:], fault, params)
    usage_error(f"unexpected argument '{args[0] if args else ''}' found")


if __name__ == "__main__":
    main(sys.argv[1:])
