"""doctor names the cache directory's file system and warns when it is a network one."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from launcher_probe.doctor.filesystem import filesystem_type, network_warning
from tests.conftest import HostEnv, run_cli

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="from /proc/self/mountinfo")


def mountinfo(tmp_path: Path, *mounts: tuple[str, str]) -> str:
    lines = [
        f"{n} 1 0:{n} / {point} rw,relatime shared:{n} - {kind} server:/export rw"
        for n, (point, kind) in enumerate(mounts, 20)
    ]
    file = tmp_path / "mountinfo"
    file.write_text("\n".join(lines) + "\n")
    return str(file)


def test_the_deepest_mount_holding_the_directory_decides(tmp_path: Path) -> None:
    home = tmp_path / "my home"
    (home / "cache").mkdir(parents=True)
    info = mountinfo(
        tmp_path,
        ("/", "ext4"),
        (str(home).replace(" ", "\\040"), "nfs4"),
        (f"{home}x", "tmpfs"),  # a sibling whose name only starts alike
    )
    assert filesystem_type(str(home / "cache" / "launcher-probe"), info) == "nfs4"
    assert filesystem_type(str(tmp_path), info) == "ext4"
    warning = network_warning(str(home), "nfs4")
    assert warning is not None and "network file system (nfs4)" in warning
    assert network_warning(str(home), "ext4") is None


def test_doctor_shows_the_cache_file_system(host_env: HostEnv) -> None:
    done = run_cli("doctor", "--json", env=host_env.env)
    cache = json.loads(done.stdout)["settings"]["cache"]
    assert cache["filesystem"] == filesystem_type(str(host_env.cache_dir))
    assert cache["filesystem"] is not None and cache["warning"] is None
    text = run_cli("doctor", env=host_env.env).stdout
    assert f"cache dir:      {cache['directory']} ({cache['filesystem']})" in text
