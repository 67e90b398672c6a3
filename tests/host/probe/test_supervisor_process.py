"""The probe's supervisor runs by file path: it imports no module of this package, so no
package ``__init__`` (nor what one re-exports) costs a probe anything."""

from __future__ import annotations

import re
import subprocess
import sys

from launcher_probe.host.probe import supervisor_client


def test_the_supervisor_imports_nothing_of_the_package() -> None:
    # A closed descriptor: the supervisor has imported all it uses before it fails on it.
    supervisor = supervisor_client._SUPERVISOR_FILE
    done = subprocess.run(
        [sys.executable, "-S", "-I", "-X", "importtime", supervisor, "999", "1"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={},
        cwd="/",
    )
    imported = re.findall(r"^import time:.*\|\s*(\S+)$", done.stderr, re.MULTILINE)
    assert "_socket" in imported  # the measurement saw the supervisor's own imports
    assert not [name for name in imported if name.startswith("launcher_probe")]
    assert done.returncode != 0 and "OSError" in done.stderr
