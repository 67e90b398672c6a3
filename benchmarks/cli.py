"""The rows a fresh ``launcher-probe`` process makes (P2 warm, P5 cold, P4 herd, the warm
CLI's RSS) and their floors, each sampled side by side with its yardstick; and the raw
probe, the yardstick of not caching at all."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from benchmarks.core import Action, Env, Row, children_cpu, interleaved_medians

HERD = 32
#: The variable naming the cache root (each row's own; a cold run's never used before).
CACHE_DIR = "LAUNCHER_PROBE_CACHE_DIR"
#: The yardstick of not caching at all, as the rows name it (``raw_probe``).
RAW_PROBE = "raw probe (no cache)"
#: How the console script runs a ``resolve`` (``cli.console``): pip's wrapper imports ``re``
#: and ``cli``, the collector is off for the command, and what was made is frozen at the
#: end, not collected, and not taken apart either (``cli.exit_without_teardown``).
CONSOLE_START = "import re, launcher_probe.cli; import gc; gc.disable()"
CONSOLE_EXIT = "gc.freeze(); launcher_probe.cli.exit_without_teardown(0)"
#: What a cold ``resolve --codex`` imports besides filelock (``host.attempt`` would import
#: it): the slow path's stages and the command; with and without ``import filelock`` after
#: them, the import's cost where the cold path has imported what it shares with filelock.
COLD_IMPORTS = (
    f"{CONSOLE_START}; import launcher_probe.commands.resolve, "
    "launcher_probe.host.cache.policy, launcher_probe.host.discovery.order, "
    "launcher_probe.host.native.follow, launcher_probe.host.probe"
)


def raw_probe(env: Env) -> Action:
    """The probe's two Codex invocations run from ``sh`` in the probe's environment,
    without launcher-probe: ``--version``, then ``sandbox`` with a read-only state running
    ``printf``. The cost of not caching at all."""
    root = Path(tempfile.mkdtemp(dir=env.scratch))
    for name in ("home", "codex-home", "workspace"):
        (root / name).mkdir(mode=0o700)
    root_read = {"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"}
    state = {
        "permissionProfile": {
            "type": "managed",
            "file_system": {"type": "restricted", "entries": [root_read]},
            "network": "restricted",
        },
        "sandboxCwd": (root / "workspace").as_uri(),
    }
    script = (
        '"$0" --version >/dev/null && '
        '"$0" sandbox --sandbox-state-json "$1" -- /bin/sh -c "printf %s nonce" >/dev/null'
    )
    argv = ["/bin/sh", "-c", script, env.codex, json.dumps(state, separators=(",", ":"))]
    probe_env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(root / "home"),
        "CODEX_HOME": str(root / "codex-home"),
        "LC_ALL": "C.UTF-8",
        "RUST_BACKTRACE": "0",
    }

    def run() -> None:
        subprocess.run(argv, env=probe_env, cwd=root, check=True, stderr=subprocess.DEVNULL)

    return run


def from_a_new_shell(argv: list[str]) -> list[str]:
    """``argv`` run by a shell of its own, which stays its parent (another one each time,
    as for ``$(launcher-probe resolve)`` in a script)."""
    return ["sh", "-c", '"$@"; exit "$?"', "sh", *argv]


def discovering(env: Env) -> dict[str, str]:
    """An environment where discovery finds the binary first: its directory first on PATH,
    a private HOME and config directory (no install of this machine's user in the way)."""
    home = env.scratch / "discovery-home"
    for directory in (home, home / ".config"):
        directory.mkdir(mode=0o700, exist_ok=True)
    return {
        **env.with_cache("discovery"),
        "PATH": f"{os.path.dirname(env.codex)}:/usr/bin:/bin",
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
    }


def after_globs(env: Env) -> dict[str, str]:
    """Discovery's environment (``discovering``) with the binary at no ``PATH`` entry but
    at Linuxbrew's known place, ``~/.linuxbrew/bin/codex`` (a symlink to it), which comes
    after the version managers' glob places (none matching): an MCP host started without
    the user's ``PATH``."""
    environment = {**discovering(env), **env.with_cache("discovery-globs")}
    home = env.scratch / "globs-home"
    bin_dir = home / ".linuxbrew" / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    home.chmod(0o700)
    (home / ".config").mkdir(mode=0o700, exist_ok=True)
    if not (bin_dir / "codex").is_symlink():
        (bin_dir / "codex").symlink_to(env.codex)
    return {
        **environment,
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
    }


def _found_fresh(env: Env) -> dict[str, str]:
    """Discovery's environment (``discovering``) with a cache never used before."""
    return {**discovering(env), CACHE_DIR: env.fresh_cache()[CACHE_DIR]}


def finding_nothing(env: Env) -> Action:
    """A plain ``resolve`` where discovery finds no Codex (an empty HOME, ``PATH`` without
    one: an MCP host on a machine with no Codex installed); it must end ``not_found`` (exit
    3), or the row would measure another route."""
    home = env.scratch / "empty-home"
    (home / ".config").mkdir(mode=0o700, parents=True, exist_ok=True)
    home.chmod(0o700)
    environment = {
        **env.with_cache("nothing-found"),
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
    }
    argv = [env.cli, "resolve"]

    def run() -> None:
        done = subprocess.run(
            argv, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        assert done.returncode == 3 and b"not_found" in done.stderr, done.stderr

    return run


def npm_shim(env: Env) -> dict[str, str]:
    """Discovery's environment (``discovering``) with an npm global install first on PATH
    instead: ``prefix/bin/codex -> ../lib/node_modules/@openai/codex/bin/codex.js``, the
    platform package nested in it, whose ``vendor/<triple>`` is the bench's copy of the
    Codex package directory (so its native binary is ``env.codex`` itself)."""
    from launcher_probe.host.native.shims import host_target

    target = host_target()
    assert target is not None, "Codex has no build for this host"
    package = env.scratch / "npm-prefix" / "lib" / "node_modules" / "@openai" / "codex"
    platform = package / "node_modules" / target.package
    (package / "bin").mkdir(parents=True, exist_ok=True)
    (platform / "vendor").mkdir(parents=True, exist_ok=True)
    shim = package / "bin" / "codex.js"
    shim.write_text("#!/usr/bin/env node\n// the npm shim\n")
    shim.chmod(0o755)
    (package / "package.json").write_text('{"name": "@openai/codex"}\n')
    (platform / "package.json").write_text('{"name": "@openai/codex"}\n')
    vendored = platform / "vendor" / target.triple
    if not vendored.is_symlink():
        vendored.symlink_to(os.path.dirname(os.path.dirname(env.codex)))
    link = env.scratch / "npm-prefix" / "bin" / "codex"
    link.parent.mkdir(exist_ok=True)
    if not link.is_symlink():
        link.symlink_to("../lib/node_modules/@openai/codex/bin/codex.js")
    environment = discovering(env)
    return {
        **environment,
        **env.with_cache("discovery-npm"),
        "PATH": f"{link.parent}:/usr/bin:/bin",
    }


#: What a warm ``resolve --codex`` imports after ``cli``: the command, through the client to
#: the resolver (``tests/commands/test_plain_resolve.py`` checks what it must not).
WARM_MODULES = ("launcher_probe.commands.resolve", "launcher_probe.host.resolver")
#: The floor of a warm ``resolve --codex``: the wrapper's imports, the warm modules, and the
#: console script's exit.
WARM_IMPORTS = f"{CONSOLE_START}; import {', '.join(WARM_MODULES)}; {CONSOLE_EXIT}"


def warm(env: Env, runs: int) -> list[Row]:
    """P2: a warm ``resolve --codex`` in a fresh process against what pip's console-script
    wrapper costs before any of it runs (``python -c "import re"``) and against the raw
    probe, and a warm plain ``resolve`` (discovery mode: the memo; directly on ``PATH``,
    behind an npm global shim, at a known place after the glob places, and started by a
    new shell each time, against the same for ``--codex``) against it;
    floors:
    ``python -c pass``, ``python -S``, and the wrapper plus the modules a warm resolve
    imports (``-P``: from the install, never the current directory), doing nothing, then
    ending as the console script does."""
    resolve = env.resolve_argv()
    env.run(resolve)  # the verdict is on disk from here on
    plain, plain_env = [env.cli, "resolve"], discovering(env)
    env.run(plain, plain_env)  # discovery in full once: the memo is written
    shim_env = npm_shim(env)
    env.run(plain, shim_env)  # the same through the npm shim
    globs_env = after_globs(env)
    env.run(plain, globs_env)  # the same after the glob places
    nothing = finding_nothing(env)
    nothing()  # a machine without Codex: not_found; the memo is written
    python = env.python
    (
        base,
        measured,
        bare,
        wrapper,
        raw,
        discovered,
        imports,
        shimmed,
        globbed,
        shelled,
        shelled_codex,
        found_nothing,
    ) = interleaved_medians(
        [
            env.runner([python, "-c", "pass"]),
            env.runner(resolve),
            env.runner([python, "-S", "-c", "pass"]),
            env.runner([python, "-c", "import re"]),
            raw_probe(env),
            env.runner(plain, plain_env),
            env.runner([python, "-P", "-c", WARM_IMPORTS]),
            env.runner(plain, shim_env),
            env.runner(plain, globs_env),
            env.runner(from_a_new_shell(plain), plain_env),
            env.runner(from_a_new_shell(resolve)),
            nothing,
        ],
        runs,
    )
    passes, imports_re = "python -c pass", 'python -c "import re"'
    return [
        Row(
            "P2 CLI warm resolve --codex",
            measured,
            imports_re,
            wrapper,
            1.3,
            note="pip's console-script wrapper imports re",
        ),
        Row("P2 CLI warm resolve --codex", measured, RAW_PROBE, raw, 1 / 1.8),
        Row("P2 CLI warm resolve --codex", measured, passes, base, None),
        Row(
            "discovery mode: warm plain resolve",
            discovered,
            "warm resolve --codex",
            measured,
            1.3,
            note="the discovery memo, same binary",
        ),
        Row("discovery mode: warm plain resolve", discovered, RAW_PROBE, raw, None),
        Row(
            "discovery mode, npm shim: warm plain resolve",
            shimmed,
            "warm resolve --codex",
            measured,
            1.3,
            note="the memo's trace of the shim's lookup, same binary",
        ),
        Row(
            "discovery mode, after glob places: warm plain resolve",
            globbed,
            "warm resolve --codex",
            measured,
            1.3,
            note="Linuxbrew's place, no PATH entry: the memo's globs matched again",
        ),
        Row(
            "discovery mode, a new shell each time: warm plain resolve",
            shelled,
            "the same for resolve --codex",
            shelled_codex,
            1.3,
            note="sh -c as its parent, another each run: the ancestors decide nothing",
        ),
        Row(
            "discovery mode, no Codex anywhere: plain resolve",
            found_nothing,
            imports_re,
            wrapper,
            None,
            note="not_found again: the memo of that discovery, replayed",
        ),
        Row("  floor: python -S -c pass", bare, passes, base, None, note="no site"),
        Row(
            "  floor: the wrapper and the warm modules",
            imports,
            imports_re,
            wrapper,
            None,
            note="import re, what a warm resolve --codex imports, its exit; nothing run",
        ),
        # The bound of the goal against the raw probe: what the interpreter and the wrapper
        # cost before any of launcher-probe runs, and with its warm modules imported.
        Row(
            '  floor: python -c "import re"',
            wrapper,
            RAW_PROBE,
            raw,
            None,
            note="what pip's wrapper costs before launcher-probe's first import",
        ),
        Row(
            "  floor: the wrapper and the warm modules",
            imports,
            RAW_PROBE,
            raw,
            None,
            note="the same with the warm modules imported; nothing run",
        ),
    ]


def cold(env: Env, runs: int) -> list[Row]:
    """P5, the goals Python's start-up bounds (issue 19): a cold ``resolve`` (a cache never
    used) against the raw probe; an in-process ``probe_launcher`` (its own supervisor each
    time) against the raw probe plus a supervisor's start-up (``python -S -I``) plus 3 ms.
    Floor: the raw probe plus the console script's start-up and the supervisor's. For
    information: what importing filelock costs a fresh process (``import re`` is there
    already), what it adds to the cold path's other imports (``COLD_IMPORTS``, then the
    console script's exit), and the cold row less that."""
    from launcher_probe.host.probe.steps import probe_launcher

    def probe() -> None:
        result = probe_launcher(env.codex)
        if not result.ok:
            raise SystemExit(f"the probe failed: {result.reason}: {result.detail}")

    wrapper = env.runner([env.python, "-c", "import re"])
    locking = env.runner([env.python, "-c", "import re; import filelock"])
    shared = env.runner([env.python, "-c", f"{COLD_IMPORTS}; {CONSOLE_EXIT}"])
    shared_locking = env.runner(
        [env.python, "-c", f"{COLD_IMPORTS}; import filelock; {CONSOLE_EXIT}"]
    )
    bare = env.runner([env.python, "-S", "-I", "-c", "pass"])
    raw = raw_probe(env)

    def supervised() -> None:
        raw()
        bare()

    def floor() -> None:
        supervised()
        wrapper()

    medians = interleaved_medians(
        [
            raw,
            lambda: env.run(env.resolve_argv(), env.fresh_cache()),
            probe,
            floor,
            supervised,
            wrapper,
            locking,
            shared,
            shared_locking,
            lambda: env.run([env.cli, "resolve"], _found_fresh(env)),
        ],
        runs,
    )
    base, measured, in_process, least, yardstick = medians[:5]
    filelock, on_the_path = medians[6] - medians[5], medians[8] - medians[7]
    return [
        Row(
            "P5 CLI cold resolve",
            measured,
            RAW_PROBE,
            base,
            2.5,
            note="two interpreters start (the CLI's, the supervisor's) and the slow path imports",
        ),
        Row(
            "P5 in-process cold probe",
            in_process,
            "raw + supervisor start + 3 ms",
            yardstick + 0.003,
            1.0,
            note="probe_launcher; supervisor start: python -S -I -c pass",
        ),
        Row(
            "  floor: raw + CLI + supervisor start",
            least,
            RAW_PROBE,
            base,
            None,
            note='raw probe, python -c "import re", python -S -I -c pass',
        ),
        Row(
            "  import filelock (a fresh process)",
            filelock,
            RAW_PROBE,
            base,
            None,
            note='python -c "import re; import filelock" less python -c "import re"',
        ),
        Row(
            "  import filelock after the cold path's",
            on_the_path,
            RAW_PROBE,
            base,
            None,
            note="the same, after COLD_IMPORTS (what the cold path shares with it is loaded)",
        ),
        Row(
            "P5 CLI cold resolve less that",
            measured - on_the_path,
            RAW_PROBE,
            base,
            None,
            note="what the cold row would be without filelock (an estimate)",
        ),
        Row(
            "discovery mode: cold plain resolve",
            medians[9],
            RAW_PROBE,
            base,
            None,
            note="found first on PATH (discovering): discovery, then the cold path",
        ),
    ]


def _herd(argv: list[str], env: dict[str, str]) -> list[str]:
    """Start ``HERD`` copies of ``argv`` at once; their outputs once all have exited."""
    children = [
        subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True) for _ in range(HERD)
    ]
    return [child.communicate()[0] for child in children]


class _Herd:
    """One kind of herd (``HERD`` copies of ``argv`` at once, each cache never used before,
    from ``cold_env``) and the samples of its rows: the herd, one cold run, one warm run
    and a herd with the verdict already on disk (``warm_env``, warmed first), wall time
    and CPU (``RUSAGE_CHILDREN``); the probes counted per herd (``--json`` says whether a
    process probed)."""

    def __init__(
        self,
        what: str,
        argv: list[str],
        cold_env: Callable[[], dict[str, str]],
        warm_env: dict[str, str],
    ) -> None:
        self.what, self.argv, self.cold_env, self.warm_env = what, argv, cold_env, warm_env
        self.probes: list[int] = []
        self.cpu: dict[str, list[float]] = {"herd": [], "cold": [], "warm": [], "warm herd": []}

    def actions(self) -> list[Action]:
        """The herd, one cold run, one warm run, the warm herd: timed, their CPU kept."""
        subprocess.run(self.argv, env=self.warm_env, check=True, stdout=subprocess.DEVNULL)

        def herd() -> None:
            outputs = _herd(self.argv, self.cold_env())
            self.probes.append(sum(1 for out in outputs if not json.loads(out)["from_cache"]))

        def cold() -> None:
            subprocess.run(self.argv, env=self.cold_env(), check=True, stdout=subprocess.DEVNULL)

        def warm() -> None:
            subprocess.run(self.argv, env=self.warm_env, check=True, stdout=subprocess.DEVNULL)

        def warm_herd() -> None:
            _herd(self.argv, self.warm_env)

        def kept(name: str, action: Action) -> Action:
            return lambda: self.cpu[name].append(children_cpu(action))

        return [
            kept("herd", herd),
            kept("cold", cold),
            kept("warm", warm),
            kept("warm herd", warm_herd),
        ]

    def rows(self, medians: list[float]) -> list[Row]:
        """Its rows, from the medians of :meth:`actions` (in their order)."""
        measured, one, _, warmed = medians
        cores = os.cpu_count() or 1
        cpu = {name: statistics.median(samples) for name, samples in self.cpu.items()}
        title = f"P4 herd of {HERD} {self.what}"
        counted = f"probes per herd: {', '.join(map(str, self.probes))} (goal 1)"
        return [
            Row(
                title,
                measured,
                f"cold + {HERD} x warm CPU / {cores} cores",
                one + cpu["warm"] * HERD / cores,
                1.0,
                note=counted,
                ok=set(self.probes) == {1},
            ),
            Row(
                f"{title}: CPU",
                cpu["herd"],
                f"cold + {HERD} x warm, CPU",
                cpu["cold"] + HERD * cpu["warm"],
                1.1,
                note="the wall above also waits for other load; this does not",
            ),
            # 33 processes on a few cores: each one's CPU time grows with the crowd (caches,
            # the scheduler), so the same herd with the verdict already warm shows what
            # waiting itself costs.
            Row(
                title,
                measured,
                f"cold + a warm herd of {HERD}",
                one + warmed,
                None,
                note="the same herd, the verdict on disk: what waiting adds",
            ),
            Row(
                f"{title}: CPU",
                cpu["herd"],
                f"cold + a warm herd of {HERD}, CPU",
                cpu["cold"] + cpu["warm herd"],
                None,
            ),
            Row(title, measured, f"one cold {self.what.removesuffix('s')}", one, None),
        ]


def herd(env: Env, runs: int) -> list[Row]:
    """P4: ``HERD`` cold ``resolve --codex X`` processes at once, and ``HERD`` cold plain
    ``resolve`` ones where discovery finds X first (``discovering``: the claim of the
    environment's discovery), each against one cold run plus ``HERD`` warm runs' CPU
    spread over the cores (what waiting costs nothing would take) and against one cold
    run plus the same herd with the verdict already on disk (for information); floor:
    ``HERD`` concurrent ``python -c pass``."""
    herds = [
        _Herd("CLI resolves", env.resolve_argv("--json"), env.fresh_cache, env.env),
        _Herd(
            "plain resolves",
            [env.cli, "resolve", "--json"],
            lambda: _found_fresh(env),
            discovering(env),
        ),
    ]
    bare = [env.python, "-c", "pass"]
    crowd_cpu: list[float] = []
    lone_cpu: list[float] = []

    def crowd() -> None:
        crowd_cpu.append(children_cpu(lambda: _herd(bare, env.env)))

    def alone() -> None:
        for _ in range(HERD):
            env.run(bare)

    def one_by_one() -> None:  # the same HERD processes, each alone on the machine
        lone_cpu.append(children_cpu(alone))

    actions = [action for kind in herds for action in kind.actions()]
    medians = interleaved_medians([*actions, crowd, one_by_one], runs)
    rows = [row for n, kind in enumerate(herds) for row in kind.rows(medians[4 * n : 4 * n + 4])]
    one = medians[1]  # one cold resolve --codex
    least = medians[4 * len(herds)]
    return [
        *rows,
        Row(f"  floor: {HERD} concurrent python -c pass", least, "one cold CLI resolve", one, None),
        # The CPU goal's yardstick adds up processes that ran alone; this is what a crowd
        # costs any process here, before launcher-probe runs a line.
        Row(
            f"  floor: {HERD} concurrent python -c pass: CPU",
            statistics.median(crowd_cpu),
            f"{HERD} python -c pass one by one, CPU",
            statistics.median(lone_cpu),
            None,
            note="what a crowd on these cores costs each process (caches, the scheduler)",
        ),
    ]


def warm_rss(env: Env) -> list[Row]:
    """Peak RSS of a warm CLI ``resolve`` against ``python -c pass``'s (no goal is set)."""
    env.run(env.resolve_argv())  # warm again: the helper's rows touch the binary
    base = env.peak_rss([env.python, "-c", "pass"])
    measured = env.peak_rss(env.resolve_argv())
    return [Row("peak RSS, warm CLI resolve", measured, "python -c pass", base, None, "MiB")]
