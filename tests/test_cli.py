"""The CLI's promises common to every command: one stderr line, exit codes, --help."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from launcher_probe.cli import COMMANDS
from tests.conftest import HostEnv, run_cli, run_python

#: Run the console script pip made (``script``), or ``-m launcher_probe``, with WORDS; say
#: at exit, after everything else the interpreter runs first, whether the cycle collector
#: was on and how much was frozen; and, should the interpreter take its modules apart
#: after that, ``taken apart`` (the ``__del__`` of an object only a module made then holds).
_FROZEN_AT_EXIT = """\
import atexit, gc, os, runpy, sys, types
class Witness:  # (sys.stderr is gone by then: fd 2, with what __del__ holds)
    def __del__(self, write=os.write):
        write(2, b"taken apart\\n")
def at_exit():
    print("collector:", gc.isenabled(), "frozen:", gc.get_freeze_count(), file=sys.stderr)
    holder = sys.modules["witness"] = types.ModuleType("witness")
    holder.held = Witness()
atexit.register(at_exit)
how, sys.argv = sys.argv[1], ["launcher-probe", *sys.argv[2:]]
if how == "-m":
    runpy.run_module("launcher_probe", run_name="__main__", alter_sys=True)
else:
    runpy.run_path(how, run_name="__main__")
"""


def test_a_refusal_is_one_line_with_control_characters_escaped(host_env: HostEnv) -> None:
    done = run_cli("resolve", "--codex", "/nowhere/co\ndex\x1b[31m", env=host_env.env)
    assert done.returncode == 3
    assert done.stderr.count("\n") == 1
    assert "\x1b" not in done.stderr
    assert "dex\\x1b[31m" in done.stderr


@pytest.mark.parametrize("json_output", [False, True])
def test_a_closed_stderr_keeps_messages_off_stdout(host_env: HostEnv, json_output: bool) -> None:
    """With fd 2 closed (``2>&-``), Python's ``sys.stderr`` is None and ``print`` to it
    writes to stdout: a withheld launcher's message must go nowhere instead, leaving stdout
    empty, or the JSON document alone."""
    words = ["resolve", "--codex", "/nowhere/codex", *(["--json"] if json_output else [])]
    done = subprocess.run(
        ["bash", "-c", '"$@" 2>&-', "-", sys.executable, "-m", "launcher_probe", *words],
        env=host_env.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 3
    if json_output:
        assert json.loads(done.stdout)["reason"] == "not_found"
    else:
        assert done.stdout == ""


def test_a_usage_error_is_exit_2_and_one_line(host_env: HostEnv) -> None:
    done = run_cli("resolve", "--no-such-option", env=host_env.env)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "--no-such-option" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["resolve", "--timeout", "1e10"], "at most 604800"),
        (["proxy", "--grace", "1e10", "--", "true"], "at most 604800"),
        (["proxy", "--grace", "0", "--", "true"], "above 0"),
        (["proxy", "--writable-root", "", "--print-state"], "--writable-root must not be empty"),
        (["wrap", "--cwd", "", "--print-state"], "--cwd must not be empty"),
    ],
)
def test_an_option_out_of_its_range_is_a_usage_error(
    host_env: HostEnv, args: list[str], said: str
) -> None:
    """A wait the waits beneath cannot take (they overflow), or an empty directory (an
    empty variable in a host's configuration: it would name the current directory)."""
    done = run_cli(*args, env=host_env.env)
    assert (done.returncode, done.stdout) == (2, "")
    assert said in done.stderr and done.stderr.count("\n") == 1


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_explains_itself_and_the_exit_codes(host_env: HostEnv, command: str) -> None:
    done = run_cli(command, "--help", env=host_env.env)
    assert done.returncode == 0
    assert "exit codes:" in done.stdout
    assert "4  input rejected or refused" in done.stdout


def test_debug_adds_a_traceback_and_keeps_the_exit_code(host_env: HostEnv) -> None:
    plain = run_cli("exec", "--meta", "[]", "--", "true", env=host_env.env)
    for argv in (
        ("--debug", "exec", "--meta", "[]", "--", "true"),
        ("exec", "--debug", "--meta", "[]", "--", "true"),
    ):
        done = run_cli(*argv, env=host_env.env)
        assert done.returncode == plain.returncode == 4
        assert "Traceback" in done.stderr
        assert done.stderr.splitlines()[-1] == plain.stderr.strip()


@pytest.mark.parametrize("how", ["script", "-m"])
@pytest.mark.parametrize(
    ("words", "code", "collecting", "taken_apart"),
    [
        (["sample-state", "read-only"], 0, True, True),
        (["exec", "--meta", "[]", "--", "true"], 4, True, True),
        (["resolve", "--codex", "/x"], 3, False, False),
        (["--debug", "resolve", "--codex", "/x"], 3, False, False),
        (["resolve", "--codex", "/x", "--json"], 3, False, False),
        (["resolve", "-z"], 2, False, False),
        (["resolve", "--help"], 0, False, True),  # argparse's SystemExit: the interpreter's exit
    ],
)
def test_the_console_script_leaves_what_it_made_to_the_os_at_exit(
    host_env: HostEnv,
    how: str,
    words: list[str],
    code: int,
    collecting: bool,
    taken_apart: bool,
) -> None:
    """Whatever the exit code, everything made is out of the collector's sight when the
    interpreter exits, so its exit takes nothing apart (``cli.console``); stdout is whole.
    A ``resolve`` runs without the cycle collector, and once it returned its exit code the
    process ends without the interpreter's teardown (``atexit`` run, streams flushed);
    every other command keeps both."""
    where = str(Path(sys.executable).with_name("launcher-probe")) if how == "script" else how
    done = run_python("-c", _FROZEN_AT_EXIT, where, *words, env=host_env.env)
    assert done.returncode == code, done.stderr
    said = done.stderr.rpartition("collector: ")[2].split()
    assert said[0] == str(collecting), done.stderr
    frozen = int(said[2])
    assert frozen > 1000  # the modules' classes and functions, not a handful
    assert ("taken apart" in done.stderr) is taken_apart, done.stderr
    if "--help" in words:
        assert done.stdout.startswith("usage: launcher-probe resolve")
    elif code == 0 or "--json" in words:
        assert done.stdout.endswith("}\n")


def test_a_resolve_ending_waits_for_a_running_thread(host_env: HostEnv) -> None:
    """A thread of ``threading`` still running when a ``resolve`` returned (one a
    ``sitecustomize`` started, say) is waited for, as the interpreter's exit does: the
    process ends only after it, with the command's exit code. The thread runs until the
    test closes its pipe, which it does once the command has said its refusal."""
    reading, writing = os.pipe()
    harness = (
        "import os, sys, threading\n"
        "from launcher_probe.cli import console\n"
        "def last():\n"
        f"    os.read({reading}, 1)\n"
        "    print('thread done', file=sys.stderr, flush=True)\n"
        "threading.Thread(target=last).start()\n"
        "sys.argv = ['launcher-probe', 'resolve', '--codex', '/x']\n"
        "raise SystemExit(console())\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", harness],
        env=host_env.env,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        pass_fds=(reading,),
    ) as process:
        os.close(reading)
        assert process.stderr is not None
        refusal = process.stderr.readline()
        assert refusal.startswith("launcher-probe: "), refusal
        assert process.poll() is None  # still there, for the thread
        os.close(writing)
        rest = process.stderr.read()
        assert process.wait(timeout=60) == 3
    assert rest == "thread done\n"
