"""The native launcher of the fake Codex CLI (``tests/fakes/launcher.c``), built once.

The fake must be a native executable for this host, as a real Codex CLI is: discovery
publishes nothing else. The launcher is compiled with the machine's C compiler (``$CC``,
else ``cc``, ``gcc`` or ``clang``) into ``.cache/fake-codex/<hash of the source>/launcher``
of the checkout, once for every process and every checkout sharing that cache; each build
is written beside and renamed into place, so concurrent test runs never see half a file.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

SOURCE = Path(__file__).with_name("launcher.c")
CACHE = Path(__file__).resolve().parents[2] / ".cache" / "fake-codex"
_COMPILERS = ("cc", "gcc", "clang")


class LauncherBuildFailed(RuntimeError):
    """The fake Codex CLI's launcher cannot be built: no C compiler, or it failed."""


@functools.cache
def native_launcher() -> Path:
    """The compiled launcher for the current ``launcher.c`` (built on first use)."""
    source = SOURCE.read_bytes()
    built = CACHE / hashlib.sha256(source).hexdigest()[:32] / "launcher"
    if built.is_file():
        return built
    compiler = _compiler()
    built.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=built.parent, prefix=".launcher.")
    os.close(fd)
    command = [compiler, "-O2", "-Wall", "-Wextra", "-Werror", "-o", temporary, str(SOURCE)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise LauncherBuildFailed(f"{' '.join(command)} failed:\n{done.stderr}")
        os.replace(temporary, built)
    finally:
        Path(temporary).unlink(missing_ok=True)
    return built


def _compiler() -> str:
    wanted = os.environ.get("CC")
    for name in (wanted,) if wanted else _COMPILERS:
        found = shutil.which(name)
        if found:
            return found
    raise LauncherBuildFailed(
        f"the fake Codex CLI is a native executable built from {SOURCE.name}, and no C "
        f"compiler was found ({'$CC=' + wanted if wanted else ', '.join(_COMPILERS)}): "
        "install one (e.g. the gcc package) to run the tests"
    )
