"""Benchmark: one table; every number is a ratio to a yardstick sampled side by side with
it in the same run (interleaved), and each row says whether its goal is met. Rows marked
``floor`` bound what a goal can reach.

Measured as a user runs it: the console script of a plain (non-editable) install in its
own venv, each CLI command a fresh process, no helper running unless the row is about
the helper; the real Codex CLI from ``scripts/fetch-codex``. Run it through
``scripts/bench``, which builds that venv.

Usage: bench.py VENV CODEX [--quick] [RUNS]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import bench_cli
import bench_helper
import bench_inprocess
from bench_core import Env, Row, table


def measure(env: Env, runs: int, requests: int) -> list[Row]:
    """Every row, in the table's order."""
    rows = bench_inprocess.rows(env, runs)
    rows += bench_cli.warm(env, runs)
    rows += bench_helper.rows(env, bench_cli.raw_probe(env), runs, requests)
    rows += bench_cli.herd(env, max(2, runs // 4))
    rows += bench_cli.cold(env, runs)
    rows += bench_cli.warm_rss(env)
    return rows


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("venv", type=Path, help="the venv of a plain install")
    parser.add_argument("codex", help="the real Codex CLI's native binary")
    parser.add_argument("runs", type=int, nargs="?", help="samples per row (default 20)")
    parser.add_argument("--quick", action="store_true", help="5 samples per row")
    args = parser.parse_args(argv)
    runs = args.runs or (5 if args.quick else 20)
    started, load = time.monotonic(), os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="launcher-probe-bench-") as scratch:
        env = Env(args.venv, args.codex, Path(scratch))
        os.environ.update(
            LAUNCHER_PROBE_CACHE_DIR=str(env.scratch / "in-process"),
            LAUNCHER_PROBE_SOCKET=env.env["LAUNCHER_PROBE_SOCKET"],
        )
        rows = measure(env, runs, requests=1000 if args.quick else 2000)
    loads = [", ".join(f"{value:.2f}" for value in each) for each in (load, os.getloadavg())]
    print(
        f"launcher-probe bench: {runs} samples per row, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, load average {loads[0]} at the start, "
        f"{loads[1]} at the end"
    )
    print(table(rows))
    missed = sum(1 for row in rows if row.verdict == "NOT met")
    print(f"\n{missed} goal(s) not met; {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
