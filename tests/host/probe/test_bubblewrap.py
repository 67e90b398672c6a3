"""The verdict records which bubblewrap the probe's ``codex sandbox`` used, with its SHA-256."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from launcher_probe.host.bubblewrap import Bubblewrap, bubblewrap_for
from tests.conftest import HostEnv, run_cli

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="bubblewrap is Linux's")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def executable(path: Path, text: str = "#!/bin/sh\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


@pytest.mark.real_codex
def test_probe_json_cache_show_and_doctor_name_the_bundled_bubblewrap(
    host_env: HostEnv, real_codex: Path
) -> None:
    """The probe's PATH is /usr/bin:/bin; with no bwrap there, the real CLI uses the one in
    its package's ``codex-resources/``, and the record says which, by content."""
    if any(os.access(f"{d}/bwrap", os.X_OK) for d in ("/usr/bin", "/bin")):
        pytest.skip("a system bwrap is installed: the probe's codex uses it")
    bundled = real_codex.parent.parent / "codex-resources" / "bwrap"
    expected = {"source": "bundled", "path": str(bundled), "sha256": sha256(bundled)}
    probed = run_cli("probe", str(real_codex), "--json", env=host_env.env)
    assert probed.returncode == 0, probed.stderr
    assert json.loads(probed.stdout)["bubblewrap"] == expected
    resolved = run_cli("resolve", "--codex", str(real_codex), env=host_env.env)
    assert resolved.returncode == 0, resolved.stderr
    (entry,) = json.loads(run_cli("cache", "show", "--json", env=host_env.env).stdout)["records"]
    assert entry["bubblewrap"] == expected
    shown = run_cli("cache", "show", env=host_env.env).stdout
    assert f"bubblewrap: bundled {bundled} (sha256 {expected['sha256']})" in shown
    doctor = run_cli("doctor", "--codex", str(real_codex), "--json", env=host_env.env)
    assert json.loads(doctor.stdout)["launcher"]["probe"]["bubblewrap"] == expected
    text = run_cli("doctor", "--codex", str(real_codex), env=host_env.env).stdout
    assert f"bubblewrap: bundled {bundled}" in text


def test_the_first_bwrap_on_path_outside_the_working_directory_wins(tmp_path: Path) -> None:
    codex = executable(tmp_path / "package" / "bin" / "codex")
    cwd = tmp_path / "cwd"
    inside = executable(cwd / "bin" / "bwrap")
    first = executable(tmp_path / "first" / "bwrap", "#!/bin/sh\n# first\n")
    executable(tmp_path / "second" / "bwrap")
    (tmp_path / "not-executable").mkdir()
    (tmp_path / "not-executable" / "bwrap").write_text("")
    search = os.pathsep.join(
        ["relative", str(inside.parent), str(tmp_path / "not-executable"), str(first.parent),
         str(tmp_path / "second")]
    )  # fmt: skip
    found = bubblewrap_for(str(codex), search, str(cwd))
    assert found == Bubblewrap("path", str(first), sha256(first))


@pytest.mark.parametrize("layout", ["beside", "one-up", "both"])
def test_else_the_bundled_one_beside_codex_then_one_directory_up(
    tmp_path: Path, layout: str
) -> None:
    codex = executable(tmp_path / "package" / "bin" / "codex")
    beside = tmp_path / "package" / "bin" / "codex-resources" / "bwrap"
    one_up = tmp_path / "package" / "codex-resources" / "bwrap"
    if layout in ("beside", "both"):
        executable(beside)
    if layout in ("one-up", "both"):
        executable(one_up, "#!/bin/sh\n# one up\n")
    link = tmp_path / "elsewhere" / "codex"
    link.parent.mkdir()
    link.symlink_to(codex)  # codex looks beside its own file, not beside a symlink
    found = bubblewrap_for(str(link), "/nonexistent", str(tmp_path))
    chosen = one_up if layout == "one-up" else beside
    assert found == Bubblewrap("bundled", str(chosen), sha256(chosen))
    shutil.rmtree(tmp_path / "package" / "bin" / "codex-resources", ignore_errors=True)
    shutil.rmtree(tmp_path / "package" / "codex-resources", ignore_errors=True)
    assert bubblewrap_for(str(link), "/nonexistent", str(tmp_path)) == Bubblewrap(
        "missing", None, None
    )
