"""``scripts/fetch-codex``: a fetch says what it fetches, shows progress on a terminal, and
says nothing when the version is there. Run on a copy of the scripts, with an ``npm`` on
PATH that installs a stand-in native binary, so nothing is downloaded."""

from __future__ import annotations

import os
import platform
import pty
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_program

VERSION = "0.0.7"
TRIPLES = {
    ("Linux", "x86_64"): ("linux-x64", "x86_64-unknown-linux-musl"),
    ("Linux", "aarch64"): ("linux-arm64", "aarch64-unknown-linux-musl"),
    ("Darwin", "x86_64"): ("darwin-x64", "x86_64-apple-darwin"),
    ("Darwin", "arm64"): ("darwin-arm64", "aarch64-apple-darwin"),
}
#: Installs what `npm install --prefix P @openai/codex@V` would leave, for the native binary.
FAKE_NPM = """#!/bin/sh
prefix= spec=
while [ $# -gt 0 ]; do
  case "$1" in --prefix) prefix=$2; shift ;; @openai/codex@*) spec=$1 ;; esac
  shift
done
version=${spec#@openai/codex@}
dir="$prefix/node_modules/@openai/codex-PLATFORM/vendor/TRIPLE/bin"
mkdir -p "$dir"
printf '#!/bin/sh\\necho codex-cli %s\\n' "$version" > "$dir/codex"
chmod 755 "$dir/codex"
echo "fake npm installed $spec" >> "$prefix/../npm-calls"
"""


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A copy of scripts/fetch-codex and a one-version scripts/codex-versions; an env whose
    PATH has the fake npm first."""
    names = TRIPLES.get((platform.system(), platform.machine()))
    if names is None:
        pytest.skip("scripts/fetch-codex knows no Codex build for this host")
    root = tmp_path / "tree"
    (root / "scripts").mkdir(parents=True)
    shutil.copy2(ROOT / "scripts" / "fetch-codex", root / "scripts" / "fetch-codex")
    (root / "scripts" / "codex-versions").write_text(f"{VERSION}  # the only one\n")
    npm_dir = tmp_path / "npm-bin"
    npm_dir.mkdir()
    npm = npm_dir / "npm"
    npm.write_text(FAKE_NPM.replace("PLATFORM", names[0]).replace("TRIPLE", names[1]))
    npm.chmod(0o755)
    return root, {**os.environ, "PATH": f"{npm_dir}:/usr/bin:/bin"}


def fetch(root: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return run_program(root / "scripts" / "fetch-codex", *args, env=env, timeout=120)


ANNOUNCED = (
    f"fetch-codex: fetching @openai/codex@{VERSION} with npm into .cache/codex/{VERSION}/ "
    "(about 400 MB, once)"
)


@pytest.mark.parametrize("args", [(), ("--all",)])
def test_off_a_terminal_a_fetch_says_what_it_fetches_and_a_second_says_nothing(
    tree: tuple[Path, dict[str, str]], args: tuple[str, ...]
) -> None:
    root, env = tree
    first = fetch(root, env, *args)
    assert first.returncode == 0, first.stderr
    assert first.stderr.splitlines() == [ANNOUNCED]  # no progress line off a terminal
    native = Path(first.stdout.strip())
    assert native.is_file() and str(native).startswith(str(root / ".cache" / "codex" / VERSION))
    again = fetch(root, env, *args)
    assert (again.returncode, again.stdout, again.stderr) == (0, first.stdout, "")
    assert (root / ".cache" / "codex" / "npm-calls").read_text().count("installed") == 1


def on_a_terminal(root: Path, env: dict[str, str], *args: str) -> tuple[int, str]:
    """Run with stderr on a pseudo-terminal: the status and what the terminal showed."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [str(root / "scripts" / "fetch-codex"), *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=follower,
    )
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # EIO: every writer closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    return process.wait(timeout=120), shown.decode()


@pytest.mark.parametrize(
    ("args", "label"),
    [((), f"fetch-codex: @openai/codex@{VERSION}: "), (("--all",), "fetch-codex: 1 version(s) ")],
)
def test_on_a_terminal_a_fetch_shows_its_progress(
    tree: tuple[Path, dict[str, str]], args: tuple[str, ...], label: str
) -> None:
    root, env = tree
    status, shown = on_a_terminal(root, env, *args)
    assert status == 0, shown
    assert ANNOUNCED in shown
    progress = [part for part in shown.replace("\r\n", "\n").split("\r") if part.startswith(label)]
    assert progress and all(" MB so far" in part for part in progress), shown
    assert on_a_terminal(root, env, *args) == (0, "")  # there already: nothing to show
