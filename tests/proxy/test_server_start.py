"""How the proxy starts the server, as a shell's ``exec`` would: the command looked up on
``PATH`` as ``execvp`` looks it up, its ``argv[0]`` as given, the proxy's working
directory, and the proxy's stderr (``/dev/null`` when the host closed it: never one of
the proxy's own pipes)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from tests.fakes import FakeCodex
from tests.proxy.conftest import PROXY

#: Writes what it was started as, then answers one ping (with its stderr's target) and ends.
SERVER = """\
#!{python}
import json, os, sys
with open("started.json", "w") as out:
    json.dump({{"argv0": sys.argv[0], "cwd": os.getcwd()}}, out)
os.write(2, b"server: on stderr\\n")
for line in sys.stdin:
    asked = json.loads(line)
    result = {{"stderr": os.readlink("/proc/self/fd/2")}}
    print(json.dumps({{"jsonrpc": "2.0", "id": asked["id"], "result": result}}), flush=True)
    break
"""
PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'


def installed_server(directory: Path, *, mode: int = 0o755) -> Path:
    server = directory / "server"
    server.write_text(SERVER.format(python=sys.executable))
    server.chmod(mode)
    return server


def proxied(
    env: dict[str, str], fake_codex: FakeCodex, cwd: Path, *command: str
) -> subprocess.CompletedProcess[bytes]:
    """The proxy run on ``command`` in ``cwd``, one ping sent."""
    argv = [*PROXY, "--codex", str(fake_codex.path), "--", *command]
    return subprocess.run(argv, env=env, cwd=cwd, input=PING, capture_output=True, timeout=60)


def test_a_command_on_path_keeps_its_argv0_and_the_working_directory(
    env: dict[str, str], fake_codex: FakeCodex, tmp_path: Path
) -> None:
    bin_dir, workdir = tmp_path / "bin", tmp_path / "work"
    bin_dir.mkdir()
    workdir.mkdir()
    installed_server(bin_dir)
    done = proxied({**env, "PATH": f"{bin_dir}:{env['PATH']}"}, fake_codex, workdir, "server")
    assert done.returncode == 0, done.stderr
    started = json.loads((workdir / "started.json").read_text())
    assert started == {"argv0": str(bin_dir / "server"), "cwd": str(workdir)}  # as #! gives it
    assert b"server: on stderr" in done.stderr


def test_a_native_command_keeps_the_name_it_was_given(
    env: dict[str, str], fake_codex: FakeCodex, tmp_path: Path
) -> None:
    """``sh``, not the path PATH gave it: what a program named by ``argv[0]`` sees."""
    shell = 'printf %s "$0" > argv0; read -r line'
    done = proxied(env, fake_codex, tmp_path, "sh", "-c", shell)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "argv0").read_text() == "sh"


def test_an_empty_path_entry_is_the_working_directory(
    env: dict[str, str], fake_codex: FakeCodex, tmp_path: Path
) -> None:
    installed_server(tmp_path)
    done = proxied({**env, "PATH": ""}, fake_codex, tmp_path, "server")
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "started.json").read_text())["argv0"] == "server"


def test_a_command_found_only_unexecutable_is_permission_denied(
    env: dict[str, str], fake_codex: FakeCodex, tmp_path: Path
) -> None:
    installed_server(tmp_path, mode=0o644)
    done = proxied({**env, "PATH": str(tmp_path)}, fake_codex, tmp_path, "server")
    assert done.returncode == 4
    assert b"cannot execute 'server': Permission denied" in done.stderr


def test_a_closed_stderr_becomes_dev_null_for_the_server_and_the_proxy(
    env: dict[str, str], fake_codex: FakeCodex, tmp_path: Path
) -> None:
    """The server runs with ``/dev/null`` as its stderr, and the proxy's own messages go
    nowhere: the host's stdout carries the server's answer alone."""
    server = installed_server(tmp_path)
    absent = ["--codex", str(tmp_path / "no-codex")]  # a withheld launcher: the proxy says so
    argv = [*PROXY, *absent, "--", str(server)]
    done = subprocess.run(
        ["bash", "-c", '"$@" 2>&-', "-", *argv],
        env=env,
        cwd=tmp_path,
        input=PING,
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0
    (line,) = done.stdout.splitlines()
    assert json.loads(line)["result"] == {"stderr": "/dev/null"}


def test_a_broken_symlink_on_path_is_no_such_file(
    env: dict[str, str], fake_codex: FakeCodex, tmp_path: Path
) -> None:
    (tmp_path / "server").symlink_to(tmp_path / "gone")
    done = proxied({**env, "PATH": str(tmp_path)}, fake_codex, tmp_path, "server")
    assert done.returncode == 4
    assert b"cannot execute 'server': No such file or directory" in done.stderr


def ignored_signals(env: dict[str, str], fake_codex: FakeCodex, cwd: Path, trap: str) -> int:
    """The ``SigIgn`` mask the server starts with, under a proxy started by a shell that
    ran ``trap '' TRAP`` first (nothing when empty)."""
    server = ["sh", "-c", "grep SigIgn /proc/$$/status > ignored; read -r line"]
    argv = [*PROXY, "--codex", str(fake_codex.path), "--", *server]
    shell = f"trap '' {trap}; exec \"$@\"" if trap else 'exec "$@"'
    done = subprocess.run(
        ["bash", "-c", shell, "-", *argv], env=env, cwd=cwd, input=PING, timeout=60
    )
    assert done.returncode == 0
    return int((cwd / "ignored").read_text().split()[1], 16)


def test_the_server_ignores_what_the_host_ignored_and_nothing_else(
    env: dict[str, str], fake_codex: FakeCodex, tmp_path: Path
) -> None:
    """As from a plain exec: ``nohup`` (SIGHUP ignored) reaches the server; the signals
    the supervisor ignores for itself do not."""
    stopping = 1 << (signal.SIGHUP - 1) | 1 << (signal.SIGINT - 1) | 1 << (signal.SIGQUIT - 1)
    stopping |= 1 << (signal.SIGTERM - 1)
    assert ignored_signals(env, fake_codex, tmp_path, "") & stopping == 0
    hup = 1 << (signal.SIGHUP - 1)
    assert ignored_signals(env, fake_codex, tmp_path, "HUP") & stopping == hup
