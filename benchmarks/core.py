"""What every part of the benchmark shares: interleaved timing, child processes, the
environment (plain install, real Codex CLI, private cache and socket) and the table."""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

Action = Callable[[], object]
MIB = 1 << 20


def seconds(action: Action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def interleaved_medians(actions: Sequence[Action], runs: int) -> list[float]:
    """The median time of each action, sampled in turn (the order rotating each round), so
    drift in the machine's load (two shared cores) hits every one alike."""
    samples: list[list[float]] = [[] for _ in actions]
    for round_ in range(runs):
        for offset in range(len(actions)):
            index = (round_ + offset) % len(actions)
            samples[index].append(seconds(actions[index]))
    return [statistics.median(column) for column in samples]


def children_cpu(action: Action) -> float:
    """The CPU seconds (user and system) of the child processes ``action`` ran and reaped."""

    def used() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    before = used()
    action()
    return used() - before


def components(codex: str) -> int:
    """How many components the walk of ``codex`` has (one ``lstat`` each when replayed)."""
    from launcher_probe.host.paths.fingerprint import Fingerprint

    return len(Fingerprint.of(codex, codex).components)


def batched(action: Action, calls: int) -> Action:
    """``action`` called ``calls`` times in a row: one sample of a fast in-process call."""

    def batch() -> None:
        for _ in range(calls):
            action()

    return batch


def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def vm_hwm(pid: int) -> int | None:
    """The process's own peak RSS in bytes (``VmHWM``), or None where there is no /proc."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    line = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


def peak_rss_bytes(maxrss: int) -> int:
    """``ru_maxrss`` in bytes (it is KiB on Linux, bytes on macOS)."""
    return maxrss if sys.platform == "darwin" else maxrss * 1024


#: Run argv[1:] as a forked child (stdout to /dev/null); print its ru_maxrss and exit code.
_PEAK = r"""
import os, sys
pid = os.fork()
if pid == 0:
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(usage.ru_maxrss, os.waitstatus_to_exitcode(status))
"""


class Env:
    """The plain install, the real Codex CLI and a private scratch directory: a cache per
    name, and a socket path where no helper listens (a CLI ``resolve`` runs in process, as
    it does for a user who runs no helper)."""

    def __init__(self, venv: Path, codex: str, scratch: Path) -> None:
        self.python = str(venv / "bin" / "python")
        self.cli = str(venv / "bin" / "launcher-probe")
        self.codex = codex
        self.scratch = scratch
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        self.env["LAUNCHER_PROBE_SOCKET"] = str(scratch / "no-helper.sock")
        self.env["LAUNCHER_PROBE_CACHE_DIR"] = str(scratch / "cache")
        self._fresh = 0

    def with_cache(self, name: str) -> dict[str, str]:
        return {**self.env, "LAUNCHER_PROBE_CACHE_DIR": str(self.scratch / name)}

    def fresh_cache(self) -> dict[str, str]:
        """An environment with a cache directory never used before."""
        self._fresh += 1
        return self.with_cache(f"cold-{self._fresh}")

    def resolve_argv(self, *extra: str) -> list[str]:
        return [self.cli, "resolve", "--codex", self.codex, *extra]

    def run(self, argv: Sequence[str], env: dict[str, str] | None = None) -> None:
        subprocess.run(argv, env=env or self.env, check=True, stdout=subprocess.DEVNULL)

    def runner(self, argv: Sequence[str], env: dict[str, str] | None = None) -> Action:
        return lambda: self.run(argv, env)

    def peak_rss(self, argv: Sequence[str]) -> int:
        """Peak RSS of ``argv`` in bytes: its ``wait4`` usage, read by a small ``python -S``
        that forks it (a child this process spawned would inherit this process's peak,
        as ``vfork`` shares its memory until the ``exec``)."""
        out = subprocess.run(
            [self.python, "-I", "-S", "-c", _PEAK, *argv],
            env=self.env,
            check=True,
            stdout=subprocess.PIPE,
            text=True,
        ).stdout
        maxrss, status = map(int, out.split())
        if status != 0:
            raise SystemExit(f"{argv} exited {status}")
        return peak_rss_bytes(maxrss)


def cpu_ticks() -> tuple[int, int] | None:
    """The machine's CPU time so far, in ticks: (stolen by the hypervisor, wanted: all but
    idle and I/O wait), from ``/proc/stat``; None where there is none."""
    try:
        with open("/proc/stat") as stream:
            fields = [int(field) for field in stream.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    # user nice system idle iowait irq softirq steal guest guest_nice: the guests are
    # inside user and nice already
    fields = (fields + [0] * 8)[:8]
    return fields[7], sum(fields) - fields[3] - fields[4]


def stolen_share(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float | None:
    """The share of the CPU time wanted between two ``cpu_ticks`` the hypervisor took."""
    if before is None or after is None or after[1] <= before[1]:
        return None
    return (after[0] - before[0]) / (after[1] - before[1])


#: A section during which the hypervisor took more than this share of the CPU time wanted
#: is measured again (its rows would show the stalls, not the code).
STEAL_LIMIT = 0.05


@dataclass(frozen=True)
class Section:
    """A group of rows, measured one after the other: its title, the load average when
    it started, the share of the CPU time wanted while it ran that the hypervisor took (a
    virtual machine's vCPU taken away stalls whatever runs on it: the p99 rows show it
    first), and the component count of the binary it measured."""

    title: str
    rows: list[Row]
    load: tuple[float, float, float]
    stolen: float | None
    components: int
    #: Which measurement of the section this is, and how many were made (more than one:
    #: the hypervisor took more than ``STEAL_LIMIT`` before; the least stolen is kept).
    attempt: int = 1
    attempts: int = 1

    @property
    def noisy(self) -> bool:
        """The hypervisor took more than ``STEAL_LIMIT`` even in the attempt kept: the
        rows show its stalls as much as the code."""
        return self.stolen is not None and self.stolen > STEAL_LIMIT

    def header(self) -> str:
        load = ", ".join(f"{value:.2f}" for value in self.load)
        stolen = "" if self.stolen is None else f"; CPU stolen {self.stolen:.1%}"
        if self.attempts > 1:
            stolen += f", attempt {self.attempt} of {self.attempts}"
        if self.noisy:
            stolen += f", over {STEAL_LIMIT:.0%}: noise-bound"
        return f"== {self.title} (load average {load}{stolen}; codex: {self.components} components)"


@dataclass(frozen=True)
class Row:
    """One line of the table: ``measured`` against ``base`` (its yardstick) in the same
    unit, and the goal ``measured / base <= goal`` (``ok`` False for a side condition
    missed, such as more than one probe). A row without a goal is a floor (named
    ``floor: ...``) or for information."""

    name: str
    measured: float
    yardstick: str
    base: float
    goal: float | None
    unit: str = "s"  # "s", "MiB" or "/s" (measured and base are then seconds per item)
    note: str = ""
    ok: bool = True

    @property
    def ratio(self) -> float:
        return self.measured / self.base

    @property
    def verdict(self) -> str:
        if self.goal is None:
            return "floor" if self.name.lstrip().startswith("floor:") else "info"
        return "met" if self.ok and self.ratio <= self.goal else "NOT met"


def shown(value: float, unit: str) -> str:
    if unit == "MiB":
        return f"{value / MIB:.1f} MiB"
    if unit == "/s":
        return f"{1 / value:,.0f}/s"
    if value < 1e-3:
        return f"{value * 1e6:.0f} µs"
    return f"{value * 1e3:.1f} ms"


def table(sections: Sequence[Section]) -> str:
    """The rows as aligned text: what, measured, yardstick, ratio, goal, verdict, note;
    each section under its header."""
    cells: list[tuple[str, ...]] = [("what", "measured", "yardstick", "", "ratio", "goal", "", "")]
    headers: dict[int, str] = {}
    for section in sections:
        headers[len(cells)] = section.header()
        cells.extend(_cells(row) for row in section.rows)
    widths = [max(len(line[column]) for line in cells) for column in range(8)]
    right = {1, 3, 4}
    lines = []
    for index, line in enumerate(cells):
        if index in headers:
            lines.append(headers[index])
        lines.append(
            "  ".join(
                cell.rjust(width) if column in right else cell.ljust(width)
                for column, (cell, width) in enumerate(zip(line, widths, strict=True))
            ).rstrip()
        )
    return "\n".join(lines)


def _cells(row: Row) -> tuple[str, ...]:
    goal = "" if row.goal is None else f"<= {row.goal:.3g}x"
    return (
        row.name,
        shown(row.measured, row.unit),
        row.yardstick,
        shown(row.base, row.unit),
        f"{row.ratio:.3g}x",
        goal,
        row.verdict,
        row.note,
    )
