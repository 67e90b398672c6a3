"""``scripts/fetch-inspector``: a fetch says what it fetches and prints the Inspector's
``mcp-inspector``; a second says nothing and runs no npm; without npm, when npm fails or
installs something else, it says so, exits 1 and leaves nothing that a later run takes for
installed. Run on a copy of the script and its pins, with an ``npm`` on PATH that installs
a stand-in, so nothing is downloaded."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGE = "@modelcontextprotocol/inspector"
VERSION = json.loads((ROOT / "scripts" / "inspector" / "package.json").read_text())["dependencies"][
    PACKAGE
]
#: Leaves what `npm ci --prefix P` leaves for the script: P's `.bin/mcp-inspector`, which
#: prints the version P's package.json pins (VERSION_MADE: another), and with NODE_WANTED
#: the package's ``engines`` (``node >=NODE_WANTED``). FAIL: it fails after making the tree,
#: as an npm that is interrupted or fails half-way may leave it.
FAKE_NPM = """#!/bin/sh
called="$*" prefix=
while [ $# -gt 0 ]; do
  case "$1" in --prefix) prefix=$2; shift ;; esac
  shift
done
echo "fake npm $called" >> "$prefix/../npm-calls"
[ -f "$prefix/package-lock.json" ] || { echo "npm error: no package-lock.json" >&2; exit 1; }
pin='s|.*"@modelcontextprotocol/inspector": *"\\([^"]*\\)".*|\\1|p'
pinned=$(sed -n "$pin" "$prefix/package.json")
package="$prefix/node_modules/@modelcontextprotocol/inspector"
mkdir -p "$package" "$prefix/node_modules/.bin"
printf '#!/bin/sh\\necho %s\\n' "${VERSION_MADE:-$pinned}" > "$package/launcher"
chmod 755 "$package/launcher"
ln -sf ../@modelcontextprotocol/inspector/launcher "$prefix/node_modules/.bin/mcp-inspector"
[ -z "$NODE_WANTED" ] ||
  printf '{"engines": {"node": ">=%s"}}\n' "$NODE_WANTED" > "$package/package.json"
[ -z "$FAIL" ] || { echo "npm error code E404" >&2; exit 1; }
"""


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A copy of the script and its pins; an env whose PATH has the fake npm first."""
    root = tmp_path / "tree"
    shutil.copytree(ROOT / "scripts" / "inspector", root / "scripts" / "inspector")
    shutil.copy2(ROOT / "scripts" / "fetch-inspector", root / "scripts" / "fetch-inspector")
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


def without_npm(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """``env`` with a PATH of what the script runs before it looks for npm, and no npm."""
    tools = tmp_path / "tools"
    tools.mkdir(exist_ok=True)
    for name in ("bash", "cat", "dirname", "sed"):
        found = shutil.which(name)
        assert found is not None, name
        if not (tools / name).exists():
            (tools / name).symlink_to(found)
    return {**env, "PATH": str(tools)}


def store(root: Path) -> list[str]:
    """What .cache/inspector holds, but npm's call log."""
    return sorted(path.name for path in (root / ".cache" / "inspector").iterdir())


ANNOUNCED = (
    f"fetch-inspector: fetching {PACKAGE}@{VERSION} with npm into .cache/inspector/{VERSION}/ "
    "(about 150 MB, once)"
)


def test_a_fetch_says_what_it_fetches_and_a_second_says_nothing(
    tree: tuple[Path, dict[str, str]],
) -> None:
    root, env = tree
    first = fetch(root, env)
    assert first.returncode == 0, first.stderr
    assert first.stderr.splitlines() == [ANNOUNCED]
    launcher = root / ".cache" / "inspector" / VERSION / "node_modules" / ".bin" / "mcp-inspector"
    assert first.stdout == f"{launcher}\n"
    answered = subprocess.run([launcher, "--version"], capture_output=True, text=True)
    assert answered.stdout == f"{VERSION}\n"
    again = fetch(root, env)
    assert (again.returncode, again.stdout, again.stderr) == (0, first.stdout, "")
    calls = (root / ".cache" / "inspector" / "npm-calls").read_text().splitlines()
    assert len(calls) == 1 and calls[0].startswith("fake npm ci ")
    assert store(root) == [VERSION, "npm-calls"]  # the fetch's own directory is gone


def test_without_npm_it_says_so(tree: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    root, env = tree
    done = fetch(root, without_npm(env, tmp_path))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"fetch-inspector: npm is not on PATH; cannot fetch {PACKAGE}@{VERSION} "
        "(install Node.js with npm)\n"
    )


def test_a_tree_npm_failed_on_is_shown_and_never_taken_for_installed(
    tree: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    root, env = tree
    failed = fetch(root, {**env, "FAIL": "1"})
    assert (failed.returncode, failed.stdout) == (1, "")
    assert f"fetch-inspector: npm ci of {PACKAGE}@{VERSION} failed:\n" in failed.stderr
    assert "npm error code E404" in failed.stderr
    assert store(root) == ["npm-calls"]  # the half-made tree is gone
    assert fetch(root, without_npm(env, tmp_path)).returncode == 1  # nothing to take
    done = fetch(root, env)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [ANNOUNCED]


def test_another_version_installed_is_not_taken_for_this_one(
    tree: tuple[Path, dict[str, str]],
) -> None:
    root, env = tree
    done = fetch(root, {**env, "VERSION_MADE": "0.0.1"})
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.splitlines()[-1] == (
        f"fetch-inspector: npm ran, but its mcp-inspector does not say {VERSION}"
    )
    assert store(root) == ["npm-calls"]


def test_a_tree_in_place_that_no_fetch_finished_is_fetched_again(
    tree: tuple[Path, dict[str, str]],
) -> None:
    root, env = tree
    left = root / ".cache" / "inspector" / VERSION / "node_modules" / ".bin"
    left.mkdir(parents=True)  # as an older script, or a copy cut short, left it
    (left / "mcp-inspector").write_text(f"#!/bin/sh\necho {VERSION}\n")
    (left / "mcp-inspector").chmod(0o755)
    done = fetch(root, env)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [ANNOUNCED]
    assert (root / ".cache" / "inspector" / VERSION / ".fetched").read_text() == f"{VERSION}\n"


@pytest.mark.parametrize(("wanted", "warned"), [("20.20.3", True), ("20.20.2", False)])
def test_a_node_older_than_the_package_declares_is_named_and_the_fetch_goes_on(
    tree: tuple[Path, dict[str, str]], tmp_path: Path, wanted: str, warned: bool
) -> None:
    root, env = tree
    node = tmp_path / "npm-bin" / "node"  # first on PATH, beside the fake npm
    node.write_text("#!/bin/sh\necho v20.20.2\n")
    node.chmod(0o755)
    done = fetch(root, {**env, "NODE_WANTED": wanted})
    assert done.returncode == 0, done.stderr
    warning = (
        f"fetch-inspector: warning: {PACKAGE}@{VERSION} declares Node >= {wanted}; this is "
        f"Node 20.20.2 (its CLI answered; should a test that runs it fail, install Node "
        f"{wanted} or newer)"
    )
    assert done.stderr.splitlines() == [ANNOUNCED, warning] if warned else [ANNOUNCED]
    assert (root / ".cache" / "inspector" / VERSION / ".fetched").read_text() == f"{VERSION}\n"
    assert fetch(root, env).stderr == ""  # installed: nothing said, as before
