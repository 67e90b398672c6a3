"""``scripts/fetch-inspector``: a fetch says what it fetches and prints the Inspector's
``mcp-inspector``; a second says nothing and runs no npm; without npm, or when npm fails,
it says so and exits 1. Run on a copy of the script, with an ``npm`` on PATH that installs
a stand-in, so nothing is downloaded."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT

SCRIPT = ROOT / "scripts" / "fetch-inspector"
VERSION = re.search(r"^version=(\S+)$", SCRIPT.read_text(), re.MULTILINE)[1]  # type: ignore[index]
PACKAGE = "@modelcontextprotocol/inspector"
#: Leaves what `npm install --prefix P @modelcontextprotocol/inspector@V` would, for the
#: script's check: the package's package.json and the `.bin` launcher. VERSION_MADE
#: overrides the version it writes; FAIL makes it fail as npm does.
FAKE_NPM = """#!/bin/sh
[ -n "$FAIL" ] && { echo "npm error code E404" >&2; exit 1; }
prefix= spec=
while [ $# -gt 0 ]; do
  case "$1" in --prefix) prefix=$2; shift ;; @modelcontextprotocol/inspector@*) spec=$1 ;; esac
  shift
done
version=${VERSION_MADE:-${spec##*@}}
package="$prefix/node_modules/@modelcontextprotocol/inspector"
mkdir -p "$package" "$prefix/node_modules/.bin"
printf '{\\n  "name": "@modelcontextprotocol/inspector",\\n  "version": "%s"\\n}\\n' \
  "$version" > "$package/package.json"
printf '#!/bin/sh\\necho inspector\\n' > "$package/launcher"
chmod 755 "$package/launcher"
ln -sf ../@modelcontextprotocol/inspector/launcher "$prefix/node_modules/.bin/mcp-inspector"
echo "fake npm installed $spec" >> "$prefix/../npm-calls"
"""


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A copy of the script; an env whose PATH has the fake npm first."""
    root = tmp_path / "tree"
    (root / "scripts").mkdir(parents=True)
    shutil.copy2(SCRIPT, root / "scripts" / "fetch-inspector")
    npm_dir = tmp_path / "npm-bin"
    npm_dir.mkdir()
    (npm_dir / "npm").write_text(FAKE_NPM)
    (npm_dir / "npm").chmod(0o755)
    return root, {**os.environ, "PATH": f"{npm_dir}:/usr/bin:/bin"}


def fetch(root: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(root / "scripts" / "fetch-inspector")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_fetch_says_what_it_fetches_and_a_second_says_nothing(
    tree: tuple[Path, dict[str, str]],
) -> None:
    root, env = tree
    first = fetch(root, env)
    assert first.returncode == 0, first.stderr
    assert first.stderr.splitlines() == [
        f"fetch-inspector: fetching {PACKAGE}@{VERSION} with npm into "
        f".cache/inspector/{VERSION}/ (about 150 MB, once)"
    ]
    launcher = root / ".cache" / "inspector" / VERSION / "node_modules" / ".bin" / "mcp-inspector"
    assert first.stdout == f"{launcher}\n"
    assert subprocess.run([first.stdout.strip()], capture_output=True, text=True).stdout == (
        "inspector\n"
    )
    again = fetch(root, env)
    assert (again.returncode, again.stdout, again.stderr) == (0, first.stdout, "")
    calls = (root / ".cache" / "inspector" / "npm-calls").read_text()
    assert calls == f"fake npm installed {PACKAGE}@{VERSION}\n"


def test_without_npm_it_says_so(tree: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    root, env = tree
    tools = tmp_path / "tools"  # what the script runs, and no npm
    tools.mkdir()
    for name in ("bash", "dirname", "grep", "mkdir"):
        found = shutil.which(name)
        assert found is not None, name
        (tools / name).symlink_to(found)
    done = fetch(root, {**env, "PATH": str(tools)})
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"fetch-inspector: npm is not on PATH; cannot fetch {PACKAGE}@{VERSION} "
        "(install Node.js with npm)\n"
    )


def test_a_failed_npm_is_shown_and_nothing_is_printed(tree: tuple[Path, dict[str, str]]) -> None:
    root, env = tree
    done = fetch(root, {**env, "FAIL": "1"})
    assert (done.returncode, done.stdout) == (1, "")
    assert f"fetch-inspector: npm install {PACKAGE}@{VERSION} failed:\n" in done.stderr
    assert "npm error code E404" in done.stderr


def test_another_version_installed_is_not_taken_for_this_one(
    tree: tuple[Path, dict[str, str]],
) -> None:
    root, env = tree
    done = fetch(root, {**env, "VERSION_MADE": "0.0.1"})
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.splitlines()[-1] == (
        f"fetch-inspector: npm ran, but .cache/inspector/{VERSION}/ holds no {PACKAGE}@{VERSION}"
    )
