"""The plain ``resolve`` forms (``--codex``, ``--json``, ``--via``) run without argparse, and
a warm one in a fresh process imports only what it needs; whatever the cache holds, they
print exactly what the parsed command prints.

The parsed twin of each form adds ``--lock-timeout 30`` (the default), which the plain
form does not take: every pair is one command run both ways, in real processes.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from launcher_probe.cli import build_parser
from launcher_probe.commands.resolve import plain_form
from launcher_probe.errors import ExitCode
from launcher_probe.host.cache.policy import VerdictCache
from tests.conftest import ROOT, HostEnv
from tests.fakes import FakeCodex, install_fake_codex
from tests.service.helper import fresh_socket, running_helper, short_directory

PARSED = ("--lock-timeout", "30")
#: Modules a warm plain resolve must not import (the issue's list, and the slow path's).
HEAVY = {
    "argparse",
    "dataclasses",
    "inspect",
    "typing",
    "pathlib",
    "platformdirs",
    "psutil",
    "hashlib",
    "tomllib",
    "threading",
    "launcher_probe.host.discovery",
    "launcher_probe.host.discovery.config_file",
    "launcher_probe.host.native",
    "launcher_probe.host.binary",
    "launcher_probe.host.probe",
    "launcher_probe.host.cache.entry_lock",
    "filelock",
    "cachetools",
    # C modules and wrappers worth a millisecond or so each that only other paths use:
    # signal's enums (the handlers come from _signal), the helper's socket, cache clear's
    # flock, the parser's arguments.
    "signal",
    "_socket",
    "fcntl",
    "launcher_probe.arguments",
}


#: What pip's console script runs (less its ``import re``, which the baseline lacks).
CONSOLE_SCRIPT = "import sys; from launcher_probe.cli import main; sys.exit(main())"


def imported(stderr: str) -> list[str]:
    """The modules ``-X importtime`` reported."""
    return re.findall(r"^import time:.*\|\s*(\S+)$", stderr, re.MULTILINE)


def without_importtime(stderr: str) -> str:
    return "".join(
        line for line in stderr.splitlines(keepends=True) if not line.startswith("import time:")
    )


def run(env: dict[str, str], *args: str) -> tuple[int, str, str, list[str]]:
    """``python -X importtime -m launcher_probe ARGS``: exit code, stdout, stderr without the
    import times, and the modules imported."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "launcher_probe", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.returncode, done.stdout, without_importtime(done.stderr), imported(done.stderr)


def record_file(fake: FakeCodex) -> Path:
    return Path(VerdictCache().record_file(str(fake.path)))


def _edit_record(change: Callable[[dict[str, object]], None]) -> Callable[[FakeCodex], None]:
    def edit(fake: FakeCodex) -> None:
        file = record_file(fake)
        value = json.loads(file.read_text())
        change(value)
        file.write_text(json.dumps(value))

    return edit


def _expire(value: dict[str, object]) -> None:
    value["probed_at"], value["expires_at"] = time.time() - 7200, time.time() - 3600


def _touch(fake: FakeCodex) -> None:
    st = fake.path.stat()
    os.utime(fake.path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def _garble(fake: FakeCodex) -> None:
    record_file(fake).write_text("{not json")


def _remove(fake: FakeCodex) -> None:
    record_file(fake).unlink()


def _unsafe(fake: FakeCodex) -> None:
    fake.path.parent.chmod(0o777)


def _nothing(fake: FakeCodex) -> None:
    pass


#: What happens to the warm cache (or the files) before each run of a pair.
SCENARIOS: dict[str, Callable[[FakeCodex], None]] = {
    "hit": _nothing,
    "expired": _edit_record(_expire),
    "changed-binary": _touch,
    "bad-record": _garble,
    "missing-record": _remove,
    "unsafe-directory": _unsafe,
}
#: Scenarios that probe again, so that --json shows a new time: compared without --json.
PROBING = {"expired", "changed-binary", "bad-record", "missing-record"}


@pytest.fixture
def warm(host_env: HostEnv, fake_codex: FakeCodex) -> Iterator[FakeCodex]:
    code, _, err, _ = run(host_env.env, "resolve", "--codex", str(fake_codex.path))
    assert code == 0, err
    mode = fake_codex.path.parent.stat().st_mode
    yield fake_codex
    fake_codex.path.parent.chmod(mode)


def assert_same_both_ways(
    env: dict[str, str], before: Callable[[], None], *args: str
) -> tuple[int, str, str]:
    """Run ``resolve ARGS`` plain and parsed, ``before`` each; both print the same bytes
    and exit alike, and only the parsed one imported argparse."""
    before()
    plain = run(env, "resolve", *args)
    before()
    parsed = run(env, "resolve", *args, *PARSED)
    assert plain[:3] == parsed[:3]
    assert "argparse" not in plain[3] and "argparse" in parsed[3]
    return plain[:3]


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_the_plain_form_prints_what_the_parsed_one_does(
    host_env: HostEnv, warm: FakeCodex, scenario: str
) -> None:
    setup = SCENARIOS[scenario]
    probes = warm.probe_count()
    code, out, err = assert_same_both_ways(
        host_env.env, lambda: setup(warm), "--codex", str(warm.path)
    )
    if scenario == "unsafe-directory":
        assert code == 3 and "unsafe_permissions" in err
    else:
        assert code == 0 and json.loads(out) == {"codexExecutable": str(warm.path)}
    if scenario == "bad-record":
        assert "cache record" in err and "ignored" in err
    # Each run of a probing scenario found no usable verdict; the others probed nothing.
    assert warm.probe_count() == probes + (2 if scenario in PROBING else 0)
    if scenario not in PROBING:
        _, out_json, _ = assert_same_both_ways(
            host_env.env, lambda: setup(warm), "--json", "--codex", str(warm.path)
        )
        assert json.loads(out_json)["via"] == "local"


def test_a_config_file_changes_neither_form(host_env: HostEnv, warm: FakeCodex) -> None:
    """``--codex`` is the only candidate: a config file naming another path is not read."""
    config = host_env.config_dir / "launcher-probe" / "config.toml"
    config.parent.mkdir(mode=0o700)
    config.write_text('codex = "/nonexistent/codex"\n')
    _, out, _ = assert_same_both_ways(
        host_env.env, lambda: None, "--json", "--codex", str(warm.path)
    )
    assert json.loads(out)["from_cache"] is True


def test_a_running_helper_is_asked_by_both_forms(host_env: HostEnv, warm: FakeCodex) -> None:
    with short_directory() as directory:
        path = fresh_socket(directory)
        env = {**host_env.env, "LAUNCHER_PROBE_SOCKET": str(path)}
        with running_helper(env, path):
            _, out, _ = assert_same_both_ways(
                env, lambda: None, "--json", "--via", "helper", "--codex", str(warm.path)
            )
            assert json.loads(out)["via"] == "helper"
            # auto: this user's own record answers first (it must be checked anyway)
            _, out, _ = assert_same_both_ways(
                env, lambda: None, "--json", "--codex", str(warm.path)
            )
            assert json.loads(out)["via"] == "local"
            _, out, _ = assert_same_both_ways(
                env, lambda: None, "--json", "--via", "local", "--codex", str(warm.path)
            )
            assert json.loads(out)["via"] == "local"


def test_asking_a_running_helper_imports_no_json_dataclasses_or_typing(
    host_env: HostEnv, warm: FakeCodex
) -> None:
    """The client checks the helper's answer strictly (``json_input`` on ``json_core``)
    without the json package, dataclasses (and its inspect) or typing."""
    with short_directory() as directory:
        path = fresh_socket(directory)
        env = {**host_env.env, "LAUNCHER_PROBE_SOCKET": str(path)}
        with running_helper(env, path):
            code, out, err, modules = run(
                env, "resolve", "--via", "helper", "--codex", str(warm.path)
            )
    assert (code, json.loads(out)) == (0, {"codexExecutable": str(warm.path)}), err
    assert "launcher_probe.json_input" in modules  # the answer was parsed, strictly
    assert sorted({"json", "dataclasses", "inspect", "typing"} & set(modules)) == []


def test_a_dead_helpers_socket_falls_back_alike(host_env: HostEnv, warm: FakeCodex) -> None:
    with short_directory() as directory:
        path = directory / "stale.sock"
        stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stale.bind(str(path))
        stale.close()  # the file stays; nobody listens
        env = {**host_env.env, "LAUNCHER_PROBE_SOCKET": str(path)}
        _, out, _ = assert_same_both_ways(env, lambda: None, "--json", "--codex", str(warm.path))
        assert json.loads(out)["via"] == "local"


def test_the_record_answers_as_discovery_would(host_env: HostEnv, warm: FakeCodex) -> None:
    """The operator's path from its record (no discovery) is the decision discovery makes
    for the same path named in the config file, from the same record, but for its source."""
    _, out, _, modules = run(host_env.env, "resolve", "--json", "--codex", str(warm.path))
    assert "launcher_probe.host.discovery" not in modules
    config = host_env.config_dir / "launcher-probe" / "config.toml"
    config.parent.mkdir(mode=0o700)
    config.write_text(f'codex = "{warm.path}"\n')
    code, discovered, err, modules = run(host_env.env, "resolve", "--json", "--via", "local")
    assert code == 0, err
    assert "launcher_probe.host.discovery" in modules
    assert json.loads(out) == {**json.loads(discovered), "source": "explicit"}
    # --via auto reads the config file's codex as the operator's path: its record answers
    code, recorded, err, modules = run(host_env.env, "resolve", "--json")
    assert code == 0, err
    assert "launcher_probe.host.discovery" not in modules
    assert json.loads(recorded) == json.loads(discovered)
    assert warm.probe_count() == 1


def test_a_shims_record_does_not_answer_without_discovery(
    host_env: HostEnv, tmp_path: Path
) -> None:
    """Behind an asdf shim the binary depends on ``ASDF_DATA_DIR``, which the record's walk
    does not cover: with another data dir, discovery finds (and probes) the other binary."""
    fakes = {}
    for name in ("a", "b"):
        bin_dir = tmp_path / f"asdf-{name}" / "installs" / "nodejs" / "22.12.0" / "bin"
        bin_dir.mkdir(parents=True)
        fakes[name] = install_fake_codex(bin_dir)
    shim = tmp_path / "tools" / "codex"  # not in a "shims" directory: ASDF_DATA_DIR decides
    shim.parent.mkdir()
    shim.write_text('#!/bin/sh\n# asdf-plugin: nodejs 22.12.0\nexec /opt/asdf exec "codex" "$@"\n')
    shim.chmod(0o755)
    for name in ("a", "b"):
        env = {**host_env.env, "ASDF_DATA_DIR": str(tmp_path / f"asdf-{name}")}
        code, out, err, _ = run(env, "resolve", "--json", "--codex", str(shim))
        assert code == 0, err
        assert json.loads(out)["launcher"] == {"codexExecutable": str(fakes[name].path)}
    assert (fakes["a"].probe_count(), fakes["b"].probe_count()) == (1, 1)


def test_a_warm_plain_resolve_imports_only_what_it_needs(
    host_env: HostEnv, warm: FakeCodex
) -> None:
    """In a fresh interpreter without site-packages (so neither the test venv's start-up
    nor an import of a dependency can hide in the baseline), from the sources."""
    env = {**host_env.env, "PYTHONPATH": str(ROOT)}

    def modules(*args: str) -> tuple[set[str], subprocess.CompletedProcess[str]]:
        done = subprocess.run(
            [sys.executable, "-S", "-X", "importtime", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        return set(imported(done.stderr)), done

    baseline, _ = modules("-c", "pass")
    forms = {
        # The descriptor's line: no json package (json_core), contextlib or math either.
        ("--codex", str(warm.path)): HEAVY | {"json", "contextlib", "math"},
        # An indented report: json's Python encoder.
        ("--json", "--via=local", f"--codex={warm.path}"): HEAVY,
    }
    for form, heavy in forms.items():
        loaded, done = modules("-c", CONSOLE_SCRIPT, "resolve", *form)
        assert done.returncode == 0, done.stderr
        assert "launcher_probe.host.resolver" in loaded  # the measurement saw the resolver
        assert sorted((loaded - baseline) & heavy) == []
    assert warm.probe_count() == 1


@pytest.mark.parametrize(
    "words",
    [
        [],
        ["--codex", "/x"],
        ["--codex=/x"],
        ["--codex="],
        ["--codex", ""],
        ["--json", "--codex", "/x"],
        ["--via", "local", "--json"],
        ["--via=helper", "--codex", "/a b"],
        ["--codex", "/x", "--json", "--via", "auto"],
    ],
)
def test_a_plain_form_means_what_argparse_makes_of_it(words: list[str]) -> None:
    run_plain = plain_form(words)
    assert run_plain is not None
    args = build_parser(["resolve"]).parse_args(["resolve", *words])
    assert run_plain.args == (args.codex,)
    assert run_plain.keywords == {"as_json": args.json, "via": args.via}
    assert (args.refresh, args.no_cache, args.timeout, args.lock_timeout) == (
        False,
        False,
        None,
        None,
    )


@pytest.mark.parametrize(
    "words",
    [
        ["--codex"],
        ["--codex", "--json"],
        ["--codex", "-x"],
        ["--codex", "/a", "--codex", "/b"],
        ["--json", "--json"],
        ["--json=1"],
        ["--via", "nowhere"],
        ["--via"],
        ["--cod", "/x"],
        ["--refresh"],
        ["--help"],
        ["-h"],
        ["--debug"],
        ["--", "/x"],
        ["/x"],
    ],
)
def test_anything_else_is_left_to_argparse(words: list[str]) -> None:
    assert plain_form(words) is None


def test_only_a_cold_resolve_imports_filelock(host_env: HostEnv, fake_codex: FakeCodex) -> None:
    """In the test venv, where both are importable: the cold resolve takes the entry lock
    through filelock; the warm one imports neither filelock nor cachetools."""
    cold = run(host_env.env, "resolve", "--codex", str(fake_codex.path))
    warm = run(host_env.env, "resolve", "--codex", str(fake_codex.path))
    assert cold[0] == warm[0] == 0
    assert "filelock" in cold[3] and "launcher_probe.host.cache.entry_lock" in cold[3]
    assert {"filelock", "cachetools"} & set(warm[3]) == set()
    assert fake_codex.probe_count() == 1


def test_with_no_helper_socket_no_helper_is_asked(
    host_env: HostEnv, fake_codex: FakeCodex, tmp_path: Path
) -> None:
    """``--via auto`` asks a helper only where its socket exists: with none there, a resolve
    that misses on disk and probes nothing (a herd's waiter, a path that is gone) imports
    neither ``_socket`` nor the peer check, and ``--via helper`` says what connecting would
    have said."""
    socket_path = tmp_path / "none.sock"
    env = {**host_env.env, "LAUNCHER_PROBE_SOCKET": str(socket_path)}
    code, _, err, modules = run(env, "resolve", "--codex", str(tmp_path / "gone" / "codex"))
    assert code == ExitCode.WITHHELD, err
    assert {"_socket", "launcher_probe.service.peer"} & set(modules) == set()
    code, _, err, _ = run(env, "resolve", "--via", "helper", "--codex", str(fake_codex.path))
    assert code == ExitCode.WITHHELD
    assert f"no helper answered on {socket_path}: [Errno 2] No such file or directory" in err
    assert fake_codex.probe_count() == 0


def test_a_resolve_that_finds_nothing_imports_no_filelock(host_env: HostEnv) -> None:
    """With no candidate, nothing is attempted: no entry lock is taken, so filelock (tens of
    milliseconds to import) is not imported either."""
    code, _, err, modules = run(host_env.env, "resolve", "--via", "local")
    assert code == ExitCode.WITHHELD, err
    assert "not_found" in err
    assert "launcher_probe.host.discovery.order" in modules  # discovery ran, in full
    assert "filelock" not in modules and "launcher_probe.host.attempt" not in modules
