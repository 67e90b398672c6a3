"""``scripts/run``: the whole job, ending with a published descriptor, on a machine without
a Codex CLI (the fetched copy, and it says why) and with one (that one)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import CODEX_VERSIONS, ROOT, HostEnv
from tests.fakes import FakeCodex

pytestmark = pytest.mark.real_codex


def run_script(
    env: dict[str, str], *args: str, root: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(root / "scripts" / "run"), *args],
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
    # Then the lines that make the quick start's commands work as printed.
    assert lines[-5:] == [
        published_line(fetched),
        "",
        "for the README's quick start in this shell, run:",
        f'  export PATH={ROOT / ".venv" / "bin"}:"$PATH"',
        f"  export LAUNCHER_PROBE_CODEX={fetched}",
    ]
    # As printed, they make launcher-probe resolve publish the fetched copy in a shell.
    shell = "\n".join(line.strip() for line in lines[-2:]) + "\nlauncher-probe resolve\n"
    resolved = subprocess.run(
        ["bash", "-c", shell], env=host_env.env, capture_output=True, text=True, timeout=120
    )
    assert resolved.returncode == 0, resolved.stderr
    assert resolved.stdout == json.dumps({"codexExecutable": fetched}) + "\n"


def test_with_json_it_prints_exactly_one_json_document(host_env: HostEnv, real_codex: Path) -> None:
    newest = CODEX_VERSIONS[-1]
    fetched = subprocess.run(
        [str(ROOT / "scripts" / "fetch-codex"), newest], capture_output=True, text=True, check=True
    ).stdout.strip()
    done = run_script(host_env.env, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)  # one document, nothing else on stdout
    assert report["launcher"]["launcher"] == {"codexExecutable": fetched}
    assert f"  export LAUNCHER_PROBE_CODEX={fetched}" in done.stderr.splitlines()


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
    assert "export LAUNCHER_PROBE_CODEX" not in done.stdout  # discovery finds it
    lines = done.stdout.splitlines()
    assert lines[-4:] == [
        published_line(real_codex),
        "",
        "for the README's quick start in this shell, run:",
        f'  export PATH={ROOT / ".venv" / "bin"}:"$PATH"',
    ]


def test_a_fresh_copy_gets_the_mcp_extra_so_the_example_server_imports(
    host_env: HostEnv, fake_codex: FakeCodex, tmp_path: Path
) -> None:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    copy = tmp_path / "clone"
    for name in filter(None, (os.fsdecode(entry) for entry in listed)):
        if (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "codex").symlink_to(fake_codex.path)  # found by discovery: nothing is fetched
    env = {**host_env.env, "PATH": f"{bin_dir}:{host_env.env['PATH']}"}
    done = run_script(env, root=copy)
    assert done.returncode == 0, done.stdout + done.stderr
    example = subprocess.run(
        [
            str(copy / ".venv" / "bin" / "python"),
            "-c",
            "import launcher_probe.examples.shell_server",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert example.returncode == 0, example.stderr
