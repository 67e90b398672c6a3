"""The states ``proxy --print-state`` builds, applied by the real ``codex sandbox
--sandbox-state-json`` on every version: accepted, and enforced as the policy says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.proxy.conftest import PROXY

pytestmark = pytest.mark.real_codex

#: Each line says whether the attempt worked: inside the workspace, outside it, in /tmp,
#: in a protected directory of the workspace, and opening an AF_INET socket.
PROBE = f"""
for target in inside.txt {{outside}} /tmp/launcher-probe-policy-$$ .git/x; do
  if (echo x > "$target") 2>/dev/null
  then echo "$target yes"; rm -f "$target"
  else echo "$target no"
  fi
done
{sys.executable} -c 'import socket; socket.socket(); print("network yes")' 2>/dev/null \
  || echo "network no"
"""


@pytest.mark.parametrize("mode", ["read-only", "workspace-write"])
@pytest.mark.parametrize("network", [False, True], ids=["restricted", "network"])
def test_the_policy_state_is_enforced(
    env: dict[str, str], workspace: Path, tmp_path: Path, real_codex: Path, mode: str, network: bool
) -> None:
    (workspace / ".git").mkdir()
    options = ["--sandbox", mode, "--cwd", str(workspace), *(["--network"] if network else [])]
    state = subprocess.run(
        [*PROXY, "--print-state", *options], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    outside = Path("/var/tmp") / f"launcher-probe-policy-{tmp_path.name}.txt"  # not /tmp
    script = PROBE.replace("{outside}", str(outside))
    done = subprocess.run(
        [str(real_codex), "sandbox", "--sandbox-state-json", state, "--", "sh", "-c", script],
        env=env, cwd=workspace, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    worked = dict(line.rsplit(" ", 1) for line in done.stdout.splitlines())
    writable = "yes" if mode == "workspace-write" else "no"
    assert worked["inside.txt"] == writable
    assert worked[str(outside)] == "no"
    assert worked[next(key for key in worked if key.startswith("/tmp/"))] == writable
    assert worked[".git/x"] == "no"
    assert worked["network"] == ("yes" if network else "no")
    assert not outside.exists()
