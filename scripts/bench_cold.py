"""Benchmark of a cold probe against the two Codex invocations it makes, run from sh.

Usage: .venv/bin/python scripts/bench_cold.py CODEX [RUNS]

Paired medians (each sample of a pair taken back to back, so drift in the machine's load
hits both alike) of:

- sh: ``CODEX --version`` then ``CODEX sandbox --sandbox-state-json <read-only state> --
  /bin/sh -c 'printf %s <nonce>'``, as the probe runs them (same environment);
- in-process: ``probe_launcher(CODEX)``, the probe with its supervisor;
- cold CLI: ``launcher-probe resolve --no-cache --codex CODEX`` in a fresh interpreter.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from launcher_probe.host.probe import probe_launcher


def _seconds(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def _run(argv: list[str]) -> None:
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main(codex: str, runs: int) -> None:
    with tempfile.TemporaryDirectory() as temporary:
        root = Path(temporary)
        state = {
            "permissionProfile": {
                "type": "managed",
                "file_system": {
                    "type": "restricted",
                    "entries": [
                        {"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"}
                    ],
                },
                "network": "restricted",
            },
            "sandboxCwd": root.as_uri(),
        }
        script = (
            'export PATH=/usr/bin:/bin HOME="$3" CODEX_HOME="$3" LC_ALL=C.UTF-8 RUST_BACKTRACE=0; '
            '"$1" --version && "$1" sandbox --sandbox-state-json "$2" -- '
            "/bin/sh -c 'printf %s 0123456789abcdef0123456789abcdef'"
        )
        sh = ["/bin/sh", "-c", script, "sh", codex, json.dumps(state), temporary]
        cli = [sys.executable, "-m", "launcher_probe", "resolve", "--no-cache", "--codex", codex]
        _run(sh)  # warm the page cache
        samples = [
            (
                _seconds(lambda: _run(sh)),
                _seconds(lambda: probe_launcher(codex)),
                _seconds(lambda: _run(cli)),
            )
            for _ in range(runs)
        ]
    base, probe, cold = (statistics.median(column) for column in zip(*samples, strict=True))
    print(f"two codex invocations from sh  {base * 1000:7.1f} ms")
    print(f"probe_launcher, in-process     {probe * 1000:7.1f} ms  ratio {probe / base:5.2f}x")
    print(f"cold resolve, fresh CLI        {cold * 1000:7.1f} ms  ratio {cold / base:5.2f}x")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 30)
