"""Discovery under hostile input: huge PATHs, crafted files, undecodable paths; and the
places searched as ``resolve`` reports them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from launcher_probe.contract import Reason, Source
from launcher_probe.host.decision import Withheld
from launcher_probe.host.discovery.order import MAX_PATH_ENTRIES, discover
from launcher_probe.host.native.newest import MAX_GLOB_MATCHES
from launcher_probe.host.resolver import SEARCHED, resolve_launcher
from launcher_probe.json_output import printable
from tests.conftest import HostEnv, run_cli
from tests.host.native.test_shims import npm_global
from tests.host.paths.test_rules import nobody
from tests.host.stubs import native_stub

#: Guards against a hang only (the work is linear: well under a second here).
HANG_GUARD = 120
#: Crafted shell text: a long run of '/' and a later "codex.js" word. A pattern that
#: scans a run of path characters for a trailing "codex.js" from every '/' backtracks
#: over the whole run each time: quadratic in its length.
CRAFTED = b"#!/bin/sh\n" + b"/" * 60_000 + b" codex.js\n"


def run_python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
        check=True,
    )


def test_a_huge_path_is_capped_and_the_rest_reported(host_env: HostEnv) -> None:
    """60 000 distinct entries (set in-process: an exec'd environment string is capped at
    128 KiB): at most MAX_PATH_ENTRIES are looked at, the rest is one ``limit`` item."""
    native = native_stub(host_env.home / "first" / "codex")
    code = (
        "import json, os; from launcher_probe.host.discovery.order import discover; "
        f"os.environ['PATH'] = ':'.join([{str(native.parent)!r}] + "
        "[f'/nowhere/{n}' for n in range(59_999)]); "
        "print(json.dumps(discover().to_json()))"
    )
    report = json.loads(run_python(code, host_env.env).stdout)
    on_path = [place for place in report["searched"] if place["source"] == "path"]
    assert len(on_path) == MAX_PATH_ENTRIES
    rest = 60_000 - MAX_PATH_ENTRIES
    limit = {"source": "path", "entry": f"{rest} entries after the first 1024", "reason": "limit"}
    assert report["skipped"] == [limit]
    assert [c["path"] for c in report["candidates"] if c["source"] == "path"] == [str(native)]


def test_many_routes_to_one_binary_are_merged_once_each(
    host_env: HostEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    native = native_stub(host_env.home / "real" / "codex")
    routes = []
    for number in range(300):
        route = host_env.home / f"route{number}"
        route.symlink_to(native.parent)
        routes.append(str(route))
    monkeypatch.setenv("PATH", ":".join([str(native.parent), *routes, *routes]))
    (candidate,) = [c for c in discover().candidates if c.source is Source.PATH]
    assert candidate.path == str(native)
    assert candidate.also_found_at == tuple((Source.PATH, f"{r}/codex") for r in routes)


def test_shell_text_is_parsed_in_linear_time(host_env: HostEnv) -> None:
    """Four MiB of crafted text (a quadratic scan would take hours) parse at once."""
    code = (
        "from launcher_probe.host.native.shims import shell_shim_scripts; "
        "head = b'#!/bin/sh\\n' + b'/' * (4 << 20) + b' codex.js \"$basedir/x/codex.js\"\\n'; "
        "print(shell_shim_scripts('/d/codex', head))"
    )
    assert run_python(code, host_env.env).stdout == "['/d/x/codex.js']\n"


def test_a_crafted_codex_on_path_is_classified_at_once(
    host_env: HostEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    crafted = host_env.home / "crafted" / "codex"
    crafted.parent.mkdir()
    crafted.write_bytes(CRAFTED)
    crafted.chmod(0o755)
    env = {**host_env.env, "PATH": str(crafted.parent)}
    done = subprocess.run(
        [sys.executable, "-m", "launcher_probe", "discover", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
    )
    assert done.returncode == 3, done.stderr  # a script of no format discovery follows
    (item,) = json.loads(done.stdout)["candidates"]
    assert (item["path"], item["resolved"], item["reason"]) == (
        str(crafted),
        None,
        "unrecognised_script",
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to nobody needs root")
def test_a_file_failing_the_path_rules_is_not_read(
    host_env: HostEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An npm shim owned by another user: rejected, and never read (so never resolved)."""
    link, native = npm_global(host_env.home / "prefix")
    shim = Path(os.path.realpath(link))
    os.chown(shim, nobody(), -1)
    monkeypatch.setenv("PATH", str(link.parent))
    (candidate,) = [c for c in discover().candidates if c.source is Source.PATH]
    assert candidate.verdict.reason is Reason.UNSAFE_PERMISSIONS
    assert candidate.resolved == str(shim)  # where the symlinks lead; not the native
    assert native.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to nobody needs root")
def test_a_crafted_file_of_another_user_is_rejected_unread(host_env: HostEnv) -> None:
    crafted = host_env.home / "theirs" / "codex"
    crafted.parent.mkdir()
    crafted.write_bytes(CRAFTED)
    crafted.chmod(0o644)
    os.chown(crafted, nobody(), -1)
    env = {**host_env.env, "PATH": str(crafted.parent)}
    done = run_cli("discover", "--json", env=env, timeout=HANG_GUARD)
    assert done.returncode == 3, done.stderr
    (item,) = json.loads(done.stdout)["candidates"]
    assert (item["resolved"], item["reason"]) == (str(crafted), "not_executable")


def _printable_takes_lone_surrogates() -> bool:
    try:
        printable("/\ud800")
    except UnicodeError:
        return False
    return True


@pytest.mark.skipif(
    not _printable_takes_lone_surrogates(),
    reason="printable() does not take lone surrogates yet (fixed with the path rules)",
)
def test_a_lone_surrogate_from_the_caller_is_not_utf8(host_env: HostEnv) -> None:
    discovery = discover("/\ud800")
    (candidate,) = discovery.candidates
    assert (candidate.source, candidate.resolved, candidate.verdict.reason) == (
        Source.EXPLICIT,
        None,
        Reason.NOT_UTF8,
    )
    json.dumps(discovery.to_json())  # printable, no UnicodeEncodeError
    decision = resolve_launcher("/\ud800")
    assert isinstance(decision, Withheld) and decision.reason is Reason.NOT_UTF8


def test_an_undecodable_path_from_env_or_config_is_not_utf8_or_refused(
    host_env: HostEnv,
) -> None:
    """The environment can only carry bytes: a UTF-8-encoded surrogate is not UTF-8. TOML
    refuses a surrogate escape, so such a config file is refused (exit 4, one line)."""
    encoded = os.fsdecode(b"/\xed\xa0\x80/codex")
    done = run_cli("discover", "--json", env={**host_env.env, "LAUNCHER_PROBE_CODEX": encoded})
    assert done.returncode == 3, done.stderr
    (item,) = json.loads(done.stdout)["candidates"]
    assert (item["source"], item["path"], item["reason"]) == (
        "env",
        "/\\xed\\xa0\\x80/codex",
        "not_utf8",
    )
    config = host_env.config_dir / "launcher-probe" / "config.toml"
    config.parent.mkdir(mode=0o700)
    config.write_text('codex = "/\\ud800"\n')
    done = run_cli("discover", env=host_env.env)
    assert done.returncode == 4
    assert done.stderr.startswith(f"launcher-probe: {config}: ")
    assert done.stderr.count("\n") == 1


def test_not_found_names_the_places_searched(
    host_env: HostEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries = [str(host_env.home / f"bin{n}") for n in range(40)]
    monkeypatch.setenv("PATH", ":".join(["", *entries]))
    searched = discover().searched
    decision = resolve_launcher()
    assert isinstance(decision, Withheld)
    assert decision.searched == searched
    assert len(searched) > SEARCHED
    assert decision.detail.startswith(
        f"no Codex CLI found; searched {len(searched)} place(s): "
        "harness: ancestor processes; standalone: "
    )
    assert f"PATH: {entries[0]}/codex, {entries[1]}/codex" in decision.detail
    assert f"{entries[-1]}/codex" not in decision.detail
    more = len(searched) - SEARCHED
    assert decision.detail.endswith(
        f"; and {more} more (resolve --json lists them); 1 entry(ies) skipped (discover lists them)"
    )
    done = run_cli("resolve", "--json", env=dict(os.environ))
    assert done.returncode == 3
    report = json.loads(done.stdout)
    listed = json.loads(run_cli("discover", "--json", env=dict(os.environ)).stdout)["searched"]
    assert report["searched"] == listed == [dict(place) for place in searched]


def test_a_glob_place_takes_at_most_its_cap(host_env: HostEnv) -> None:
    for number in range(MAX_GLOB_MATCHES + 6):
        native_stub(host_env.home / f".nvm/versions/node/v{number}.0.0/bin/codex")
    discovery = discover()
    nvm = [c for c in discovery.candidates if "/.nvm/" in c.path]
    assert len(nvm) == MAX_GLOB_MATCHES
    numbers = [int(c.path.split("/versions/node/v")[1].split(".")[0]) for c in nvm]
    assert numbers == sorted(numbers, reverse=True)  # newest first among those taken
    place = f"{host_env.home}/.nvm/versions/node/*/bin/codex"
    limit = {"source": "known", "entry": f"{place} past 64 matches", "reason": "limit"}
    assert limit in discovery.skipped
