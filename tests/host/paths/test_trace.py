"""A trace of paths, present or absent: its replay sees every change that would make them
resolve otherwise, and its JSON form is parsed trusting nothing."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from launcher_probe.host.paths.trace import Trace


def _tree(tmp_path: Path) -> tuple[Path, Path, Path]:
    """``a/file``, ``link -> a``, and ``a/missing`` (absent)."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "file").write_text("x")
    (tmp_path / "link").symlink_to("a")
    return tmp_path / "link" / "file", tmp_path / "a" / "missing", tmp_path / "a"


def test_a_trace_records_where_each_path_leads_and_what_is_absent(tmp_path: Path) -> None:
    present, missing, directory = _tree(tmp_path)
    trace = Trace.of([str(present), str(missing), str(missing / "deeper")])
    paths = [component.path for component in trace.components]
    assert str(tmp_path / "link") in paths and str(directory / "file") in paths
    assert trace.absent == ((str(missing), errno.ENOENT),)
    assert trace.still_matches()
    assert Trace.from_json(json.loads(json.dumps(trace.to_json()))) == trace


def _appears(present: Path, missing: Path, directory: Path) -> None:
    missing.write_text("new")


def _rewritten(present: Path, missing: Path, directory: Path) -> None:
    (directory / "file").write_text("longer")


def _relinked(present: Path, missing: Path, directory: Path) -> None:
    other = directory.parent / "b"
    other.mkdir()
    (other / "file").write_text("x")
    link = directory.parent / "link"
    link.unlink()
    link.symlink_to("b")


def _unsearchable(present: Path, missing: Path, directory: Path) -> None:
    directory.chmod(0o600)


@pytest.mark.parametrize("change", [_appears, _rewritten, _relinked, _unsearchable])
def test_any_change_that_could_resolve_otherwise_is_seen(
    tmp_path: Path, change: Callable[[Path, Path, Path], None]
) -> None:
    present, missing, directory = _tree(tmp_path)
    trace = Trace.of([str(present), str(missing)])
    change(present, missing, directory)
    try:
        assert not trace.still_matches()
    finally:
        directory.chmod(0o755)


def test_a_path_no_walk_can_record_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot be traced"):
        Trace.of(["relative/codex"])
    with pytest.raises(ValueError, match="cannot be traced"):
        Trace.of([f"/proc/{os.getpid()}/cwd/codex"])


#: Each turns a trace's JSON form (of ``link/file`` and ``a/missing``) into a bad one.
GARBLES: dict[str, Callable[[dict[str, Any]], object]] = {
    "not an object": lambda value: [],
    "no components": lambda value: {**value, "components": []},
    "components not a list": lambda value: {**value, "components": "x"},
    "a key missing": lambda value: {"absent": value["absent"]},
    "a negative errno": lambda value: {**value, "absent": [[value["absent"][0][0], -1]]},
    "an absent name twice": lambda value: {**value, "absent": value["absent"] * 2},
    "a relative absent name": lambda value: {**value, "absent": [["missing", 2]]},
    "a component garbled": lambda value: {**value, "components": [{"path": "/"}]},
}


@pytest.mark.parametrize("garble", GARBLES)
def test_a_garbled_trace_is_refused(tmp_path: Path, garble: str) -> None:
    present, missing, _ = _tree(tmp_path)
    value = Trace.of([str(present), str(missing)]).to_json()
    with pytest.raises(ValueError):
        Trace.from_json(GARBLES[garble](value))
