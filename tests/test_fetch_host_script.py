"""``scripts/fetch-host NAME``: a fetch says what it fetches and prints the host's command; a
second says nothing and runs no npm; without npm, when npm fails or installs something else,
it says so, exits 1 and leaves nothing that a later run takes for installed. Run for each
host on a copy of the script and its pins, with an ``npm`` on PATH that installs a stand-in,
so nothing is downloaded."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_program


@dataclass(frozen=True)
class Host:
    """One of scripts/hosts/: its package, the command a fetch prints (in the tree), how
    that command says its version, and the size the fetch announces."""

    name: str
    package: str
    command: str
    says: str
    size: str

    @property
    def version(self) -> str:
        pins = json.loads((ROOT / "scripts" / "hosts" / self.name / "package.json").read_text())
        version: str = pins["dependencies"][self.package]
        return version


HOSTS = [
    Host(
        "inspector",
        "@modelcontextprotocol/inspector",
        "node_modules/.bin/mcp-inspector",
        "{}",
        "about 110 MB",
    ),
    Host(
        "claude-code",
        "@anthropic-ai/claude-code",
        "node_modules/@anthropic-ai/claude-code-linux-x64/claude",
        "{} (Claude Code)",
        "about 400 MB",
    ),
]

#: Leaves what `npm ci --prefix P` leaves for the script: P's COMMAND, which prints the
#: version P's package.json pins for PACKAGE (VERSION_MADE: another) as SAYS words it, and
#: with NODE_WANTED the package's ``engines`` (``node >=NODE_WANTED``); BROKEN: a file there
#: too that fails as a binary for another libc does. FAIL: it fails after making the tree,
#: as an npm that is interrupted or fails half-way may leave it.
FAKE_NPM = """#!/bin/sh
called="$*" prefix=
while [ $# -gt 0 ]; do
  case "$1" in --prefix) prefix=$2; shift ;; esac
  shift
done
echo "fake npm $called" >> "$prefix/../npm-calls"
[ -f "$prefix/package-lock.json" ] || { echo "npm error: no package-lock.json" >&2; exit 1; }
pinned=$(sed -n "s|.*\\"$PACKAGE\\": *\\"\\\\([^\\"]*\\\\)\\".*|\\\\1|p" "$prefix/package.json")
said=$(printf "$SAYS" "${VERSION_MADE:-$pinned}")
manifest="$prefix/node_modules/$PACKAGE/package.json"
mkdir -p "$(dirname "$prefix/$COMMAND")" "$(dirname "$manifest")"
printf '#!/bin/sh\\necho "%s"\\n' "$said" > "$prefix/$COMMAND"
chmod 755 "$prefix/$COMMAND"
if [ -n "$BROKEN" ]; then
  mkdir -p "$(dirname "$prefix/$BROKEN")"
  printf '#!/bin/sh\\nexit 126\\n' > "$prefix/$BROKEN"
  chmod 755 "$prefix/$BROKEN"
fi
[ -z "$NODE_WANTED" ] || printf '{"engines": {"node": ">=%s"}}\\n' "$NODE_WANTED" > "$manifest"
[ -z "$FAIL" ] || { echo "npm error code E404" >&2; exit 1; }
"""


@pytest.fixture(params=HOSTS, ids=[host.name for host in HOSTS])
def host(request: pytest.FixtureRequest) -> Host:
    chosen: Host = request.param
    return chosen


@pytest.fixture
def tree(tmp_path: Path, host: Host) -> tuple[Path, dict[str, str]]:
    """A copy of the script and its pins; an env whose PATH has the fake npm first."""
    root = tmp_path / "tree"
    shutil.copytree(ROOT / "scripts" / "hosts", root / "scripts" / "hosts")
    shutil.copy2(ROOT / "scripts" / "fetch-host", root / "scripts" / "fetch-host")
    npm_dir = tmp_path / "npm-bin"
    npm_dir.mkdir()
    (npm_dir / "npm").write_text(FAKE_NPM)
    (npm_dir / "npm").chmod(0o755)
    fake = {"PACKAGE": host.package, "COMMAND": host.command, "SAYS": host.says.format("%s")}
    return root, {**os.environ, **fake, "PATH": f"{npm_dir}:/usr/bin:/bin"}


def fetch(root: Path, env: dict[str, str], *names: str) -> subprocess.CompletedProcess[str]:
    return run_program(root / "scripts" / "fetch-host", *names, env=env)


def without_npm(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """``env`` with a PATH of what the script runs before it looks for npm, and no npm."""
    tools = tmp_path / "tools"
    tools.mkdir(exist_ok=True)
    for name in ("bash", "basename", "cat", "dirname", "sed"):
        found = shutil.which(name)
        assert found is not None, name
        if not (tools / name).exists():
            (tools / name).symlink_to(found)
    return {**env, "PATH": str(tools)}


def store(root: Path, host: Host) -> list[str]:
    """What .cache/NAME holds, npm's call log included."""
    return sorted(path.name for path in (root / ".cache" / host.name).iterdir())


def announced(host: Host) -> str:
    return (
        f"fetch-host: fetching {host.package}@{host.version} with npm into "
        f".cache/{host.name}/{host.version}/ ({host.size}, once)"
    )


def test_a_fetch_says_what_it_fetches_and_a_second_says_nothing(
    tree: tuple[Path, dict[str, str]], host: Host
) -> None:
    root, env = tree
    first = fetch(root, env, host.name)
    assert first.returncode == 0, first.stderr
    assert first.stderr.splitlines() == [announced(host)]
    command = root / ".cache" / host.name / host.version / host.command
    assert first.stdout == f"{command}\n"
    answered = subprocess.run([command, "--version"], capture_output=True, text=True)
    assert answered.stdout == f"{host.says.format(host.version)}\n"
    again = fetch(root, env, host.name)
    assert (again.returncode, again.stdout, again.stderr) == (0, first.stdout, "")
    calls = (root / ".cache" / host.name / "npm-calls").read_text().splitlines()
    assert len(calls) == 1 and calls[0].startswith("fake npm ci ")
    assert store(root, host) == [host.version, "npm-calls"]  # the fetch's own directory is gone


@pytest.mark.parametrize(
    "names", [(), ("no-such-host",), ("../hosts/inspector",), ("-x",), ("inspector", "more")]
)
def test_a_name_that_is_no_host_is_a_usage_error(
    tree: tuple[Path, dict[str, str]], names: tuple[str, ...]
) -> None:
    root, env = tree
    done = fetch(root, env, *names)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "fetch-host: usage: scripts/fetch-host NAME, NAME one of: claude-code inspector\n"
    )


def test_without_npm_it_says_so(
    tree: tuple[Path, dict[str, str]], tmp_path: Path, host: Host
) -> None:
    root, env = tree
    done = fetch(root, without_npm(env, tmp_path), host.name)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"fetch-host: npm is not on PATH; cannot fetch {host.package}@{host.version} "
        "(install Node.js with npm)\n"
    )


def test_a_tree_npm_failed_on_is_shown_and_never_taken_for_installed(
    tree: tuple[Path, dict[str, str]], tmp_path: Path, host: Host
) -> None:
    root, env = tree
    failed = fetch(root, {**env, "FAIL": "1"}, host.name)
    assert (failed.returncode, failed.stdout) == (1, "")
    assert f"fetch-host: npm ci of {host.package}@{host.version} failed:\n" in failed.stderr
    assert "npm error code E404" in failed.stderr
    assert store(root, host) == ["npm-calls"]  # the half-made tree is gone
    assert fetch(root, without_npm(env, tmp_path), host.name).returncode == 1  # nothing to take
    done = fetch(root, env, host.name)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [announced(host)]


def test_another_version_installed_is_not_taken_for_this_one(
    tree: tuple[Path, dict[str, str]], host: Host
) -> None:
    root, env = tree
    done = fetch(root, {**env, "VERSION_MADE": "0.0.1"}, host.name)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.splitlines()[-1] == (
        f"fetch-host: npm ran, but its {Path(host.command).name} does not say {host.version}"
    )
    assert store(root, host) == ["npm-calls"]


@pytest.mark.parametrize("mark", [None, "{version}\n"])
def test_a_tree_in_place_that_no_fetch_finished_is_fetched_again(
    tree: tuple[Path, dict[str, str]], host: Host, mark: str | None
) -> None:
    """No mark (a copy cut short), or an older script's, which named no command."""
    root, env = tree
    left = root / ".cache" / host.name / host.version / host.command
    left.parent.mkdir(parents=True)
    left.write_text(f"#!/bin/sh\necho {host.version}\n")
    left.chmod(0o755)
    if mark is not None:
        (root / ".cache" / host.name / host.version / ".fetched").write_text(
            mark.format(version=host.version)
        )
    done = fetch(root, env, host.name)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [announced(host)]
    fetched = root / ".cache" / host.name / host.version / ".fetched"
    assert fetched.read_text() == f"{host.version}\n{host.command}\n"


@pytest.mark.parametrize(("wanted", "older"), [("20.20.3", True), ("20.20.2", False)])
def test_a_node_older_than_a_package_run_on_node_declares_is_named_and_the_fetch_goes_on(
    tree: tuple[Path, dict[str, str]], tmp_path: Path, host: Host, wanted: str, older: bool
) -> None:
    """Only for a host run on Node: Claude Code's command is a native binary."""
    root, env = tree
    node = tmp_path / "npm-bin" / "node"  # first on PATH, beside the fake npm
    node.write_text("#!/bin/sh\necho v20.20.2\n")
    node.chmod(0o755)
    done = fetch(root, {**env, "NODE_WANTED": wanted}, host.name)
    assert done.returncode == 0, done.stderr
    warning = (
        f"fetch-host: warning: {host.package}@{host.version} declares Node >= {wanted}; this "
        f"is Node 20.20.2 (its CLI answered; should a test that runs it fail, install Node "
        f"{wanted} or newer)"
    )
    warned = older and host.name == "inspector"
    assert done.stderr.splitlines() == [announced(host), warning] if warned else [announced(host)]
    fetched = root / ".cache" / host.name / host.version / ".fetched"
    assert fetched.read_text() == f"{host.version}\n{host.command}\n"
    assert fetch(root, env, host.name).stderr == ""  # installed: nothing said, as before


@pytest.mark.parametrize("host", [HOSTS[1]], ids=[HOSTS[1].name], indirect=True)
def test_of_two_matches_the_one_that_says_the_version_is_taken(
    tree: tuple[Path, dict[str, str]], host: Host
) -> None:
    """Claude Code's command is a pattern (a native package per platform and libc): an npm
    that ignores the lockfile's libc installs musl's beside glibc's, sorted first."""
    root, env = tree
    musl = host.command.replace("linux-x64", "linux-x64-musl")
    done = fetch(root, {**env, "BROKEN": musl}, host.name)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{root / '.cache' / host.name / host.version / host.command}\n"
    assert fetch(root, env, host.name).stdout == done.stdout  # as the fetch found it
