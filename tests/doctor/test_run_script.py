"""``scripts/run``: the whole job, ending with a published descriptor, on a machine without
a Codex CLI (the fetched copy, and it says why) and with one (that one)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import CODEX_VERSIONS, ROOT, HostEnv

pytestmark = pytest.mark.real_codex


def run_script(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ROOT / "scripts" / "run")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,  # scripts/venv may install the package first
        check=False,
    )


def published_line(path: Path | str) -> str:
    descriptor = json.dumps({"codexExecutable": str(path)})
    return f"result: ok; launcher published: {descriptor}"


def test_without_a_codex_cli_it_uses_the_fetched_copy_and_says_why(
    host_env: HostEnv, real_codex: Path
) -> None:
    newest = CODEX_VERSIONS[-1]
    fetched = subprocess.run(
        [str(ROOT / "scripts" / "fetch-codex"), newest], capture_output=True, text=True, check=True
    ).stdout.strip()
    done = run_script(host_env.env)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "result: launcher withheld: not_found (fix above)" in lines
    why = (
        "no usable Codex CLI found on this machine; using the copy scripts/fetch-codex "
        f"installed in .cache/codex/{newest}"
    )
    assert why in lines
    assert lines.index(why) > lines.index("result: launcher withheld: not_found (fix above)")
    assert lines[-1] == published_line(fetched)


def test_with_a_codex_cli_on_path_it_publishes_that_one(
    host_env: HostEnv, real_codex: Path, tmp_path: Path
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "codex").symlink_to(real_codex)
    env = {**host_env.env, "PATH": f"{bin_dir}:{host_env.env['PATH']}"}
    done = run_script(env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "scripts/fetch-codex" not in done.stdout
    assert f"1. path       {bin_dir / 'codex'}" in done.stdout
    assert done.stdout.splitlines()[-1] == published_line(real_codex)
