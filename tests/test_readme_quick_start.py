"""The README's quick start works exactly as printed: every ``sh`` and ``python`` block of
it, in order, in a directory of its own, in the shell ``scripts/run``'s export lines make
(``.venv/bin`` on PATH, ``LAUNCHER_PROBE_CODEX`` naming the fetched copy)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, HostEnv

pytestmark = pytest.mark.real_codex

README = ROOT / "README.md"


def quick_start_blocks() -> list[tuple[str, str]]:
    """(language, text) of each fenced block from "## Quick start" to the operator's part."""
    text = README.read_text()
    part = text[text.index("## Quick start") : text.index("### For an operator")]
    return re.findall(r"^```(\w*)\n(.*?)^```$", part, re.MULTILINE | re.DOTALL)


def test_the_quick_start_has_the_blocks_this_test_runs() -> None:
    languages = [language for language, _ in quick_start_blocks()]
    assert languages.count("sh") >= 5 and languages.count("python") >= 4


def test_every_quick_start_block_runs_as_printed(
    host_env: HostEnv, real_codex: Path, tmp_path: Path
) -> None:
    venv_bin = Path(sys.executable).parent  # the .venv scripts/run makes (the test extra's)
    assert (venv_bin / "launcher-probe").exists()
    env = {
        **host_env.env,
        "PATH": f"{venv_bin}:{host_env.env['PATH']}",
        "LAUNCHER_PROBE_CODEX": str(real_codex),
    }
    host_env.codex_home.mkdir(exist_ok=True)
    project = tmp_path / "lp-try"
    project.mkdir()
    outputs = []
    for number, (language, text) in enumerate(quick_start_blocks()):
        if language == "sh":
            argv = ["bash", "-e", "-c", text]
        elif language == "python":
            script = tmp_path / f"block{number}.py"
            script.write_text(text)
            argv = [sys.executable, str(script)]
        else:
            continue  # the helper's wire format, Codex's config.toml
        done = subprocess.run(
            argv,
            cwd=project,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, f"block {number} ({language}):\n{text}\n{done.stderr}"
        outputs.append(done.stdout)
    everything = "\n".join(outputs)
    descriptor = json.dumps({"codexExecutable": str(real_codex)})
    assert descriptor in everything  # `launcher-probe resolve`
    assert f"'codexExecutable': '{real_codex}'" in everything  # the injector in Python
    assert "'sandbox': 'managed'" in everything  # the SDK session ran `ls` sandboxed
    assert (project / "hi.txt").read_text() == "hi\n"  # `exec` under workspace-write
    state = json.loads((project / "state.json").read_text())
    assert state["sandboxCwd"] == project.as_uri()
