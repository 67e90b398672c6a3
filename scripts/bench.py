"""Benchmark: every number is a ratio to a yardstick measured side by side in the same run.

Measured as a user runs it: the console script of a plain (non-editable) install in its own
venv, each command a fresh process; the real Codex CLI from ``scripts/fetch-codex``.

Usage: bench.py PLAIN_VENV CODEX [RUNS]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

Action = Callable[[], object]


@dataclass(frozen=True)
class Row:
    """One line of the table: what, its time, the yardstick's, and the goal as a ratio."""

    name: str
    seconds: float
    yardstick_name: str
    yardstick_seconds: float
    goal: str
    met: bool

    @property
    def ratio(self) -> float:
        return self.seconds / self.yardstick_seconds


def _seconds(action: Action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def paired_medians(baseline: Action, action: Action, runs: int) -> tuple[float, float]:
    """Medians of ``baseline`` and ``action`` sampled alternately, so drift in the machine's
    load (two shared cores) hits both alike."""
    pairs = [(_seconds(baseline), _seconds(action)) for _ in range(runs)]
    return statistics.median(b for b, _ in pairs), statistics.median(a for _, a in pairs)


def run(argv: Sequence[str], env: dict[str, str], **kwargs: object) -> None:
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, **kwargs)  # type: ignore[call-overload]


def peak_rss_kib(argv: Sequence[str], env: dict[str, str]) -> int:
    """Peak RSS of one child, read with wait4 so earlier children do not mask it."""
    child = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{argv} exited {child.returncode}")
    return int(usage.ru_maxrss)


class Bench:
    """The environment every row shares: the plain install, the real CLI, a private cache."""

    def __init__(self, venv: Path, codex: str, runs: int, scratch: Path) -> None:
        self.python = str(venv / "bin" / "python")
        self.cli = str(venv / "bin" / "launcher-probe")
        self.codex = codex
        self.runs = runs
        self.scratch = scratch
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        self.env["LAUNCHER_PROBE_CACHE_DIR"] = str(scratch / "cache")
        self.rows: list[Row] = []
        self.notes: list[str] = []

    def with_cache(self, name: str) -> dict[str, str]:
        return {**self.env, "LAUNCHER_PROBE_CACHE_DIR": str(self.scratch / name)}

    def resolve_argv(self) -> list[str]:
        return [self.cli, "resolve", "--codex", self.codex]

    def raw_probe(self) -> Action:
        """The probe's own codex invocations run from ``sh``, without any cache: the cost
        of not caching at all."""
        root = Path(tempfile.mkdtemp(dir=self.scratch))
        for name in ("home", "codex-home", "workspace"):
            (root / name).mkdir()
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
            "sandboxCwd": (root / "workspace").as_uri(),
        }
        script = (
            '"$0" --version >/dev/null && '
            '"$0" sandbox --sandbox-state-json "$1" -- /bin/sh -c "printf %s nonce" >/dev/null'
        )
        argv = ["/bin/sh", "-c", script, self.codex, json.dumps(state, separators=(",", ":"))]
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(root / "home"),
            "CODEX_HOME": str(root / "codex-home"),
            "LC_ALL": "C.UTF-8",
        }
        return lambda: run(argv, env, cwd=root, stderr=subprocess.DEVNULL)

    def add(self, name: str, seconds: float, yardstick: str, base: float, goal: float) -> None:
        """A row whose goal is ``seconds / base <= goal``."""
        met = seconds / base <= goal
        self.rows.append(Row(name, seconds, yardstick, base, f"<= {goal:g}x", met))

    def add_speedup(
        self, name: str, seconds: float, yardstick: str, base: float, goal: float
    ) -> None:
        """A row whose goal is being ``goal`` times faster than the yardstick."""
        met = base / seconds >= goal
        self.rows.append(Row(name, seconds, yardstick, base, f"<= {1 / goal:.3g}x", met))

    def cli_warm(self) -> None:
        """P2: a warm ``resolve`` in a fresh process, against Python's own start-up and
        against not caching at all."""
        resolve = self.resolve_argv()
        run(resolve, self.env)  # warm the disk cache
        python = [self.python, "-c", "pass"]
        base, warm = paired_medians(
            lambda: run(python, self.env), lambda: run(resolve, self.env), self.runs
        )
        self.add("P2 CLI warm resolve", warm, "python -c pass", base, 1.5)
        floor = [self.python, "-S", "-c", "pass"]
        floor_s = statistics.median(_seconds(lambda: run(floor, self.env)) for _ in range(9))
        self.notes.append(f"floor: python -S -c pass {floor_s * 1e3:.1f} ms")
        raw = self.raw_probe()
        raw_s, warm2 = paired_medians(raw, lambda: run(resolve, self.env), max(5, self.runs // 3))
        self.add_speedup("P2 CLI warm resolve", warm2, "no cache (raw probe)", raw_s, 3.0)
        self.raw_seconds = raw_s
        python_rss = peak_rss_kib(python, self.env)
        warm_rss = peak_rss_kib(resolve, self.env)
        self.notes.append(
            f"peak RSS: warm CLI resolve {warm_rss / 1024:.1f} MiB, "
            f"python -c pass {python_rss / 1024:.1f} MiB"
        )

    def cli_cold(self) -> None:
        """P5: a cold ``resolve`` (empty cache) against the probe's own invocations."""
        raw = self.raw_probe()
        counter = iter(range(1 << 30))

        def cold() -> None:
            run(self.resolve_argv(), self.with_cache(f"cold-{next(counter)}"))

        base, cold_s = paired_medians(raw, cold, max(5, self.runs // 3))
        self.cold_seconds = cold_s
        self.add("P5 CLI cold resolve", cold_s, "no cache (raw probe)", base, 1.2)

    def cli_herd(self, size: int = 32) -> None:
        """P4: ``size`` cold resolvers at once through the CLI: probes run, wall time."""
        env = self.with_cache("herd")
        argv = [*self.resolve_argv(), "--json"]
        start = time.perf_counter()
        children = [
            subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True) for _ in range(size)
        ]
        outputs = [child.communicate()[0] for child in children]
        wall = time.perf_counter() - start
        probes = sum(1 for out in outputs if not json.loads(out)["from_cache"])
        name = f"P4 herd of {size} CLI resolves"
        self.add(name, wall, "one cold resolve", self.cold_seconds, 2.0)
        self.notes.append(f"{name}: {probes} probe(s) ran (goal: 1)")
        if probes != 1:
            self.rows[-1] = replace(self.rows[-1], met=False)

    def table(self) -> str:
        lines = [
            f"{'what':<34} {'measured':>11}  {'yardstick':<24} {'yardstick':>11} "
            f"{'ratio':>9}  {'goal':<10} met",
        ]
        for row in self.rows:
            lines.append(
                f"{row.name:<34} {_ms(row.seconds):>11}  {row.yardstick_name:<24} "
                f"{_ms(row.yardstick_seconds):>11} {row.ratio:>8.3f}x  {row.goal:<10} "
                f"{'yes' if row.met else 'NO'}"
            )
        return "\n".join([*lines, "", *self.notes])


def _ms(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    return f"{seconds * 1e3:.1f} ms"


def main(venv: str, codex: str, runs: int) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        bench = Bench(Path(venv), codex, runs, Path(scratch))
        bench.cli_warm()
        bench.cli_cold()
        bench.cli_herd()
        print(bench.table())


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 30)
