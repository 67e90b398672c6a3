"""Benchmark of the resolve hot path; every number is a ratio to a baseline from this run.

- process: a warm ``launcher-probe resolve`` in a fresh interpreter vs ``python -c pass``
  (wall time and peak RSS);
- in-process: a warm ``resolve_launcher`` (memory hit + stat re-check) vs a cold probe.
"""

from __future__ import annotations

import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence


def _seconds(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def _median_seconds(action: Callable[[], object], runs: int) -> float:
    return statistics.median(_seconds(action) for _ in range(runs))


def _paired_medians(
    baseline: Callable[[], object], action: Callable[[], object], runs: int
) -> tuple[float, float]:
    """Medians of ``baseline`` and ``action`` sampled alternately, so drift in the machine's
    load (two shared cores) hits both alike."""
    pairs = [(_seconds(baseline), _seconds(action)) for _ in range(runs)]
    return statistics.median(b for b, _ in pairs), statistics.median(a for _, a in pairs)


def _run(argv: Sequence[str], env: dict[str, str]) -> None:
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)


def _peak_rss_kib(argv: Sequence[str], env: dict[str, str]) -> int:
    """Peak RSS of one child, read with wait4 so earlier children do not mask it."""
    child = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{argv} exited {child.returncode}")
    return int(usage.ru_maxrss)


def main(codex: str, runs: int) -> None:
    # As installed: bytecode compiled once, not on every start.
    compileall.compile_dir(os.path.dirname(os.path.dirname(__file__)) + "/launcher_probe", quiet=1)
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "LAUNCHER_PROBE_CACHE_DIR": cache}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        os.environ["LAUNCHER_PROBE_CACHE_DIR"] = cache
        python = [sys.executable, "-c", "pass"]
        resolve = [sys.executable, "-m", "launcher_probe", "resolve", "--codex", codex]
        _run(resolve, env)  # warm the disk cache

        base, warm = _paired_medians(lambda: _run(python, env), lambda: _run(resolve, env), runs)
        base_rss = _peak_rss_kib(python, env)
        warm_rss = _peak_rss_kib(resolve, env)

        from launcher_probe.host.resolver import resolve_launcher

        cold = _median_seconds(lambda: resolve_launcher(codex, refresh=True), max(3, runs // 10))
        hot = _median_seconds(lambda: resolve_launcher(codex), runs * 10)

    print(f"python -c pass (baseline)        {base * 1000:8.1f} ms  peak RSS {base_rss} KiB")
    print(
        f"warm resolve, fresh process      {warm * 1000:8.1f} ms  ratio {warm / base:5.2f}x"
        f"  peak RSS ratio {warm_rss / base_rss:5.2f}x"
    )
    print(f"cold probe, in-process (baseline) {cold * 1000:8.2f} ms")
    print(f"warm resolve, in-process          {hot * 1000:8.3f} ms  ratio {hot / cold:7.4f}x")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
