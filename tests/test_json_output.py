"""Output is valid UTF-8 everywhere, with one escaping convention (issue 9.11).

A real directory whose name is not UTF-8 (``d\\xff``) holds a fake Codex CLI or the
cache; every command's stdout must decode strictly, be exactly
one JSON document with ``--json``, and show the byte as ``\\xNN`` (as ``discover --json``
always did), and stderr the same way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import HostEnv
from tests.fakes import FakeCodex, install_fake_codex

RAW_NAME = b"d\xff"
SHOWN_NAME = "d\\xff"
CAPABLE = '{"codex/sandbox-state": {}}'
STATE = '{"permissionProfile":{"type":"disabled"},"sandboxCwd":"file:///tmp/ws"}'


def run(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    """Run the CLI; stdout and stderr decoded strictly as UTF-8 (an error fails the test)."""
    done = subprocess.run(
        [sys.executable, "-m", "launcher_probe", *args],
        env=env,
        capture_output=True,
        timeout=60,
        check=False,
    )
    return done.returncode, done.stdout.decode("utf-8"), done.stderr.decode("utf-8")


def one_document(stdout: str) -> Any:
    """The one JSON document stdout holds (extra lines fail to parse)."""
    assert stdout.endswith("\n")
    return json.loads(stdout)


@pytest.fixture
def odd_dir(tmp_path: Path) -> Path:
    directory = tmp_path / os.fsdecode(RAW_NAME)
    directory.mkdir(mode=0o755)
    directory.chmod(0o755)
    return directory


@pytest.fixture
def odd_codex(odd_dir: Path) -> FakeCodex:
    return install_fake_codex(odd_dir)


def shown(path: Path) -> str:
    return os.fsdecode(path).replace(os.fsdecode(RAW_NAME), SHOWN_NAME)


def test_resolve_json_and_its_error_line_escape_the_path_one_way(
    host_env: HostEnv, odd_codex: FakeCodex
) -> None:
    code, out, err = run(host_env.env, "resolve", "--json", "--codex", os.fsdecode(odd_codex.path))
    decision = one_document(out)
    assert code == 3
    assert decision["reason"] == "not_utf8"
    assert decision["tried"][0]["path"] == shown(odd_codex.path)
    assert decision["detail"].count(shown(odd_codex.path)) == 1
    assert err.startswith("launcher-probe: launcher withheld: not_utf8: ")
    assert shown(odd_codex.path) in err
    assert "\\udcff" not in err + out


def test_meta_explain_escapes_the_withheld_detail(host_env: HostEnv, odd_codex: FakeCodex) -> None:
    code, out, _ = run(
        host_env.env, "meta", "--transport", "stdio", "--capabilities", CAPABLE, "--state", STATE,
        "--codex", os.fsdecode(odd_codex.path), "--explain",
    )  # fmt: skip
    explained = one_document(out)
    assert code == 0
    assert explained["reason"] == "not_utf8"
    assert shown(odd_codex.path) in explained["detail"]


def test_discover_json_keeps_the_same_convention(host_env: HostEnv, odd_codex: FakeCodex) -> None:
    code, out, _ = run(host_env.env, "discover", "--json", "--codex", os.fsdecode(odd_codex.path))
    assert code == 3
    assert one_document(out)["candidates"][0]["path"] == shown(odd_codex.path)


def test_cache_listings_escape_a_cache_directory_that_is_not_utf8(
    host_env: HostEnv, odd_dir: Path, fake_codex: FakeCodex
) -> None:
    cache = odd_dir / "cache"
    cache.mkdir(mode=0o700)
    env = {**host_env.env, "LAUNCHER_PROBE_CACHE_DIR": os.fsdecode(cache)}
    code, out, _ = run(env, "resolve", "--json", "--codex", str(fake_codex.path))
    assert (code, one_document(out)["decision"]) == (0, "published")
    code, out, _ = run(env, "cache", "show", "--json")
    listing = one_document(out)
    assert code == 0
    assert listing["directory"].startswith(shown(cache))
    assert [record["path"] for record in listing["records"]] == [str(fake_codex.path)]
    code, out, _ = run(env, "cache", "clear", "--json")
    assert (code, one_document(out)["removed"]) == (0, 1)


def test_published_descriptor_is_one_line_of_json(host_env: HostEnv, fake_codex: FakeCodex) -> None:
    code, out, err = run(host_env.env, "resolve", "--codex", str(fake_codex.path))
    assert (code, err) == (0, "")
    assert out == json.dumps({"codexExecutable": str(fake_codex.path)}) + "\n"


def test_probe_json_is_one_document(host_env: HostEnv, fake_codex: FakeCodex) -> None:
    code, out, _ = run(host_env.env, "probe", "--json", str(fake_codex.path))
    assert (code, one_document(out)["ok"]) == (0, True)
