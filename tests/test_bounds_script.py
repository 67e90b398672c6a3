"""``scripts/test-bounds`` runs named test files on the lowest allowed dependencies: each must
exist (a moved file would make that CI step run nothing and fail only there)."""

from __future__ import annotations

import re

from tests.conftest import ROOT


def test_every_file_the_bounds_script_runs_exists() -> None:
    script = (ROOT / "scripts" / "test-bounds").read_text()
    listed = re.search(r"^tests=\((.*?)\)", script, re.MULTILINE | re.DOTALL)
    assert listed is not None
    files = listed.group(1).split()
    assert len(files) >= 5
    assert [name for name in files if not (ROOT / name).is_file()] == []
