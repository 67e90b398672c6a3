"""The discovery memo below an ancestor whose executable cannot be read (Codex makes
itself undumpable, so its children cannot read its ``/proc/<pid>/exe``): what decides the
harness source then is a file no replay compares, so no memo rests on it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import HostEnv
from tests.host.cache.test_discovery_memo import installed_at
from tests.host.memo_check import timeless

#: Run with its ``argv[0]`` set to ``argv[1]``, made undumpable (as Codex makes itself, so
#: that its children cannot read its executable), it resolves with ``argv[3:]`` (under
#: ``-X importtime``) before and after ``argv[2]`` (a Codex) appears at its own ``argv[0]``,
#: and after it goes again: each answer, and whether discovery ran for it.
UNDUMPABLE_ANCESTOR = """
import ctypes, json, os, subprocess, sys
ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0
resolve = [*sys.argv[3:], "resolve", "--json", "--via", "local"]
def answer(*extra):
    done = subprocess.run([*resolve, *extra], capture_output=True, text=True)
    names = {line.rpartition("|")[2].strip() for line in done.stderr.splitlines()}
    return json.loads(done.stdout), "launcher_probe.host.discovery" in names
answers = {"before": answer()}
os.symlink(sys.argv[2], sys.argv[1])
answers.update(appeared=answer(), without_cache=answer("--no-cache"), again=answer())
os.unlink(sys.argv[1])
answers.update(gone=answer(), gone_without_cache=answer("--no-cache"))
print(json.dumps(answers))
"""


def answers_below_an_undumpable_ancestor(
    env: dict[str, str], argv0: Path, codex: Path
) -> dict[str, tuple[dict[str, object], bool]]:
    """``UNDUMPABLE_ANCESTOR``'s answers, run as ``argv0`` (as root, without the capability
    that reads any process's executable)."""
    script = [sys.executable, "-c", UNDUMPABLE_ANCESTOR, str(argv0), str(codex)]
    ancestor = ["bash", "-c", 'exec -a "$1" "${@:2}"', "-", str(argv0), *script]
    ancestor += [sys.executable, "-X", "importtime", "-m", "launcher_probe"]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("as root, setpriv is needed to drop CAP_SYS_PTRACE")
        ancestor = [setpriv, "--bounding-set", "-sys_ptrace", "--", *ancestor]
    done = subprocess.run(ancestor, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return {
        name: (answer, discovered) for name, (answer, discovered) in json.loads(done.stdout).items()
    }


@pytest.mark.parametrize("earlier", ["nothing", "a codex on PATH"])
def test_an_undumpable_harness_at_its_argv0_is_discovered_and_then_memoised(
    host_env: HostEnv, tmp_path: Path, earlier: str
) -> None:
    """Below an ancestor whose executable cannot be read, psutil takes its absolute
    ``argv[0]`` for it once a file one may run is there: the harness, when it is named as
    a Codex executable. So a Codex appearing there is found before anything found
    earlier, as full discovery finds it (no memo rested on its absence); once it is the
    harness found, the memo answers (its record's walk replayed); once it goes, full
    discovery again."""
    if earlier != "nothing":
        on_path = installed_at(tmp_path / "path-bin")
        host_env.env["PATH"] = f"{on_path.path.parent}:{host_env.env['PATH']}"
    argv0 = tmp_path / "harness-bin" / "codex"
    argv0.parent.mkdir(mode=0o755)
    answers = answers_below_an_undumpable_ancestor(
        host_env.env, argv0, installed_at(tmp_path / "real").path
    )
    before, discovered = answers["before"]
    assert discovered
    if earlier == "nothing":
        assert before["reason"] == "not_found"
    else:
        assert before["source"] == "path"
    expected, _ = answers["without_cache"]
    assert (expected["decision"], expected["source"]) == ("published", "harness"), expected
    assert expected["path"] == str(argv0)
    assert [timeless(answers[name][0]) for name in ("appeared", "again")] == [
        timeless(expected)
    ] * 2
    assert answers["again"][1] is False  # from the memo: no discovery
    gone, discovered = answers["gone"]
    assert discovered and timeless(gone) == timeless(answers["gone_without_cache"][0])
    assert timeless(gone) == timeless(before)
