"""The probe's supervisor imports no module of this package, so no package ``__init__`` (nor
what one re-exports) costs a probe anything, and no Python layer over a C module."""

from __future__ import annotations

import re
import subprocess
import sys

from launcher_probe.host.probe import supervisor_client


def test_the_supervisor_imports_nothing_of_the_package() -> None:
    # A closed descriptor: the supervisor has imported all it uses before it fails on it.
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *supervisor_client.SUPERVISOR_ARGV, "999", "1"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={},
        cwd="/",
    )
    imported = re.findall(r"^import time:.*\|\s*(\S+)$", done.stderr, re.MULTILINE)
    assert "_socket" in imported  # the measurement saw the supervisor's own imports
    assert "supervisor_process" in imported  # by name: from its cached bytecode
    assert not [name for name in imported if name.startswith("launcher_probe")]
    assert not {"os", "ctypes", "signal", "socket"} & set(imported)
    assert done.returncode != 0 and "OSError" in done.stderr
