"""``scripts/venv``: the editable install the README's set-up makes, and its bytecode."""

from __future__ import annotations

import importlib.util
import os
import subprocess
from pathlib import Path

from tests.conftest import ROOT


def test_the_package_runs_from_bytecode_even_where_python_writes_none() -> None:
    """With PYTHONDONTWRITEBYTECODE set, a module whose bytecode is missing gets it again,
    current with its source: the editable install's commands compile nothing per run."""
    source = ROOT / "launcher_probe" / "host" / "versions.py"
    cached = Path(importlib.util.cache_from_source(str(source)))
    cached.unlink(missing_ok=True)
    done = subprocess.run(
        [str(ROOT / "scripts" / "venv"), "test"],
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    header = cached.read_bytes()[:16]
    assert int.from_bytes(header[8:12], "little") == int(source.stat().st_mtime)
    assert int.from_bytes(header[12:16], "little") == source.stat().st_size
