"""What a user installs: the sdist and the wheel built from it, installed in a fresh venv."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

NEEDS_EXTRA = "needs the official MCP Python SDK (the mcp extra): pip install 'mcp<2.4,>=2.3'"


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist and the wheel ``python -m build`` makes (the wheel from the sdist)."""
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        check=True,
        timeout=120,
    )
    return out


@pytest.fixture(scope="module")
def installed(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with only the wheel installed (no dependencies): its python."""
    root = tmp_path_factory.mktemp("venv")
    venv.create(root, with_pip=False)
    python = root / "bin" / "python"
    (wheel,) = dist.glob("*.whl")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-deps",
            "--disable-pip-version-check",
            "--no-index",
            str(wheel),
        ],
        capture_output=True,
        check=True,
        timeout=120,
    )
    return python


def run_installed(python: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """``python ARGV`` in the venv's directory, so the work tree is not on ``sys.path``."""
    return subprocess.run(
        [str(python), *argv],
        cwd=python.parent,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_sdist_has_the_license_and_the_example_but_no_tests(dist: Path) -> None:
    (sdist,) = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert "LICENSE" in names
    assert "launcher_probe/examples/shell_server.py" in names
    assert not {name for name in names if name.startswith(("tests/", "scripts/", "examples/"))}


def test_the_wheel_carries_the_license_text_and_its_expression(dist: Path) -> None:
    (wheel,) = dist.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        (license_file,) = (n for n in archive.namelist() if n.endswith("licenses/LICENSE"))
        (metadata,) = (n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        text = archive.read(license_file).decode()
        headers = archive.read(metadata).decode().split("\n\n", 1)[0].splitlines()
    assert text == (ROOT / "LICENSE").read_text()
    assert "Apache License\n                           Version 2.0, January 2004" in text
    assert "License-Expression: Apache-2.0" in headers


def test_without_the_mcp_extra_the_import_error_names_the_extra(installed: Path) -> None:
    for argv in (
        ["-c", "import launcher_probe.server.mcp"],
        ["-m", "launcher_probe.examples.shell_server", "--help"],
    ):
        done = run_installed(installed, *argv)
        assert done.returncode == 1
        assert "ModuleNotFoundError: " in done.stderr  # an ImportError
        assert NEEDS_EXTRA in done.stderr


def test_with_the_mcp_packages_the_installed_example_server_runs(installed: Path) -> None:
    # The test environment's packages (mcp among them) behind the venv's own: a path entry,
    # so the editable install of the work tree is not used (its .pth is not processed).
    purelib = Path(sysconfig.get_paths()["purelib"])
    site = installed.parent.parent / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    (site / "site-packages" / "test-env.pth").write_text(f"{purelib}\n")
    where = run_installed(installed, "-c", "import launcher_probe; print(launcher_probe.__file__)")
    assert where.stdout.startswith(str(installed.parent.parent))
    done = run_installed(installed, "-m", "launcher_probe.examples.shell_server", "--help")
    assert done.returncode == 0, done.stderr
    assert "--allow-unsandboxed" in done.stdout
