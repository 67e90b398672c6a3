"""A bounded run judged on what happened, not on when its caller looked: a step that ended
while the caller was stopped past the deadline has ended in time."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.processes import wait_until

#: Run a step below a supervisor with a deadline DEADLINE_IN seconds away; print the
#: deadline first (CLOCK_MONOTONIC is the machine's), then what the run finished with.
_RUN = """
import json, sys, time
from launcher_probe.host.probe.bounded_run import run_bounded
deadline = time.monotonic() + float(sys.argv[1])
print(deadline, flush=True)
finished = run_bounded(sys.argv[2:], env={"PATH": "/usr/bin:/bin"}, cwd="/", deadline=deadline)
print(json.dumps([finished.exit_status, finished.stdout.data.decode()]), flush=True)
"""


def test_a_step_that_ended_while_its_caller_was_stopped_past_the_deadline_is_read(
    tmp_path: Path,
) -> None:
    """The caller is stopped (SIGSTOP: a debugger, a job stopped with its terminal, a
    frozen cgroup) while its step runs; the step ends; the deadline passes; the caller
    goes on. What the step wrote and its exit status are the result, not a timeout (which
    a probe would store for every process to read)."""
    started, gate, done = tmp_path / "started", tmp_path / "gate", tmp_path / "done"
    step = f": > {started}; while [ ! -e {gate} ]; do sleep 0.01; done; echo hi; : > {done}"
    caller = subprocess.Popen(
        [sys.executable, "-c", _RUN, "2", "/bin/sh", "-c", step],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert caller.stdout is not None
        deadline = float(caller.stdout.readline())
        wait_until(started.exists)
        os.kill(caller.pid, signal.SIGSTOP)
        gate.touch()
        wait_until(done.exists)
        wait_until(lambda: time.monotonic() > deadline + 0.1)  # passed while it was stopped
        os.kill(caller.pid, signal.SIGCONT)
        status, output = json.loads(caller.stdout.readline())
        assert caller.wait(timeout=60) == 0
    finally:
        caller.kill()
        caller.wait()
    assert (status, output) == (0, "hi\n")
