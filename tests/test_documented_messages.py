"""Every message as the docs print it: the tested-range warning, strict-JSON refusals,
``lock_timeout``'s exit code, a newline in a path, ``spawn_failed``'s detail, and the
error classes importable where docs/python-api.md says."""

from __future__ import annotations

import fcntl
import importlib
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from launcher_probe.errors import LauncherProbeError
from launcher_probe.host.cache.policy import VerdictCache
from launcher_probe.host.versions import untested_version_warning
from tests.conftest import ROOT, HostEnv, run_cli
from tests.fakes import FakeCodex

DOCS = ROOT / "docs"


def test_the_out_of_range_warning_is_the_documented_text(
    host_env: HostEnv, fake_codex: FakeCodex
) -> None:
    interop = (DOCS / "interop.md").read_text()
    documented = re.search(r"carries the warning\n\n```\n(.+)\n```", interop)
    assert documented is not None
    assert untested_version_warning("0.172.0") == documented.group(1)
    quoted = "outside the tested range 0.169.0\u20130.171.0; "
    for page in (ROOT / "README.md", DOCS / "cli.md"):
        assert quoted in page.read_text()
    fake_codex.set_fault("wrong_version", text="codex-cli 0.172.0")
    done = run_cli("resolve", "--via", "local", "--codex", str(fake_codex.path), env=host_env.env)
    assert done.returncode == 0, done.stderr
    assert f"launcher-probe: warning: {documented.group(1)}" in done.stderr.splitlines()


def _json_row(reason: str) -> tuple[int, str]:
    """docs/json.md's error-table row for ``reason``: (exit, when)."""
    row = re.search(rf"^\| `{reason}` \| (\d+) \| (.+) \|$", (DOCS / "json.md").read_text(), re.M)
    assert row is not None, reason
    return int(row.group(1)), row.group(2)


NOT_STRICT = ['{"a": NaN}', '{"a": 1, "a": 2}', '{"a": 1e400}', '{"a": "\\ud800"}']
CAPABLE = '{"codex/sandbox-state": {}}'
OPTIONS = ["--capabilities", "--caller-meta", "--host-meta", "--state", "exec --meta"]
#: What --progress-token reads as JSON: a number literal or a string literal.
TOKENS = ["1e400", '"\\ud800"']
CASES = [(option, text) for option in OPTIONS for text in NOT_STRICT]
CASES += [("--progress-token", token) for token in TOKENS]


def _argv(option: str, value: str) -> list[str]:
    if option == "exec --meta":
        return ["exec", "--json", "--meta", value, "--", "true"]
    base = ["meta", "--json", "--via", "local", "--transport", "stdio"]
    if option == "--capabilities":
        return [*base, option, value]
    return [*base, "--capabilities", CAPABLE, option, value]


@pytest.mark.parametrize(("option", "text"), CASES)
def test_json_that_is_not_strict_is_invalid_json_exit_4_in_every_argument(
    host_env: HostEnv, option: str, text: str
) -> None:
    done = run_cli(*_argv(option, text), env=host_env.env)
    report = json.loads(done.stdout)
    assert (done.returncode, report["error"]["reason"]) == (4, "invalid_json"), done.stderr
    assert _json_row("invalid_json")[0] == 4


def test_json_that_does_not_parse_is_a_usage_error_as_documented(host_env: HostEnv) -> None:
    done = run_cli(*_argv("--caller-meta", '{"a": '), env=host_env.env)
    assert (done.returncode, json.loads(done.stdout)["error"]["reason"]) == (2, "usage_error")


def test_lock_timeout_exits_as_json_md_says(host_env: HostEnv, fake_codex: FakeCodex) -> None:
    path = str(fake_codex.path)
    cache = VerdictCache()
    cache.disk.check_directories(create=True)
    holder = os.open(cache.lock_file(path), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        argv = ("resolve", "--via", "local", "--refresh", "--lock-timeout", "1", "--codex", path)
        done = run_cli(*argv, env=host_env.env)
    finally:
        os.close(holder)
    assert "launcher withheld: lock_timeout: " in done.stderr
    assert done.returncode == _json_row("lock_timeout")[0] == 3


def test_a_newline_in_a_path_is_shown_as_backslash_n_on_stderr(
    host_env: HostEnv, tmp_path: Path
) -> None:
    odd = tmp_path / "x\ny"
    odd.mkdir()
    done = run_cli("resolve", "--via", "local", "--codex", str(odd / "codex"), env=host_env.env)
    assert done.returncode == 3
    (line,) = done.stderr.splitlines()
    assert f"{tmp_path}/x\\ny/codex: " in line


def _elf_with_a_missing_interpreter(target: Path) -> str:
    """A copy of /bin/true whose PT_INTERP names a loader that does not exist; returns it."""
    data = Path(shutil.which("true") or "/bin/true").read_bytes()
    found = re.search(rb"/lib[^\0]*/ld-[^\0]*\.so[^\0]*\0", data[:4096])
    if found is None:
        pytest.skip("/bin/true names no ELF interpreter (a static build)")
    interpreter = found.group()[:-2] + b"X"
    assert not os.path.exists(interpreter)
    target.write_bytes(data[: found.start()] + interpreter + data[found.end() - 1 :])
    target.chmod(0o755)
    return interpreter.decode()


def test_spawn_failed_names_the_missing_elf_interpreter_after_the_path(
    host_env: HostEnv, tmp_path: Path
) -> None:
    binary = tmp_path / "sf" / "codex"
    binary.parent.mkdir()
    interpreter = _elf_with_a_missing_interpreter(binary)
    done = run_cli("resolve", "--via", "local", "--codex", str(binary), env=host_env.env)
    assert done.returncode == 3
    assert done.stderr.splitlines() == [
        f"launcher-probe: launcher withheld: spawn_failed: {binary}: identity: cannot be "
        f"executed: its ELF interpreter {interpreter} does not exist (No such file or directory)"
    ]


def _documented_error_classes() -> dict[str, str]:
    """docs/python-api.md's table: class name -> the module it is imported from."""
    text = (DOCS / "python-api.md").read_text()
    table = text[text.index("| import from | classes |") :].split("\n\n", 1)[0]
    found = {}
    for module, classes in re.findall(r"^\| `([a-z_.]+)` \| (.+) \|$", table, re.M):
        for name in re.findall(r"`(\w+)`", classes):
            found[name] = module
    return found


def _subclasses(base: type[LauncherProbeError]) -> set[type[LauncherProbeError]]:
    found = {base}
    for sub in base.__subclasses__():
        found |= _subclasses(sub)
    return found


def test_every_error_class_is_importable_where_the_docs_say() -> None:
    documented = _documented_error_classes()
    for name, module in documented.items():
        error = getattr(importlib.import_module(module), name)
        assert issubclass(error, LauncherProbeError), name
    import pkgutil

    import launcher_probe

    for info in pkgutil.walk_packages(launcher_probe.__path__, "launcher_probe."):
        if not info.name.endswith("__main__") and ".examples." not in info.name:
            importlib.import_module(info.name)
    public = {cls.__name__ for cls in _subclasses(LauncherProbeError)}
    public = {name for name in public if not name.startswith("_")}
    assert public <= set(documented), public - set(documented)
