"""verify_launcher: only the Codex CLI, verified through the host's verdict cache, is run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from launcher_probe.contract import Reason
from launcher_probe.host.decision import Published
from launcher_probe.host.native.shims import host_target
from launcher_probe.host.resolver import resolve_launcher
from launcher_probe.server.launcher import verify_launcher
from tests.conftest import HostEnv, run_cli
from tests.fakes import FakeCodex, install_fake_codex
from tests.server.launchers import FOREIGN_NAME, elf_named, foreign_elf, script_named


def cached_records(host_env: HostEnv) -> dict[str, dict[str, object]]:
    """This host's verdict records (as ``cache show --json`` lists them), by path."""
    shown = run_cli("cache", "show", "--json", env=host_env.env)
    assert shown.returncode == 0, shown.stderr
    return {record["path"]: record for record in json.loads(shown.stdout)["records"]}


def test_the_real_codex_cli_passes_and_its_verdict_is_the_hosts(
    codex: str, isolated: HostEnv
) -> None:
    assert verify_launcher(codex).ok
    record = cached_records(isolated)[codex]  # what the host side's resolve reads
    assert (record["ok"], record["state"]) == (True, "fresh")
    decision = resolve_launcher(codex)
    assert isinstance(decision, Published) and decision.from_cache


def test_a_verdict_the_host_side_stored_is_used_without_probing(
    codex: str, isolated: HostEnv
) -> None:
    published = run_cli("resolve", "--codex", codex, env=isolated.env)  # the host side
    assert published.returncode == 0, published.stderr
    code = (
        "import sys; from launcher_probe.server.request import SandboxRequest; "
        "meta = {'codex/sandbox-state': {'permissionProfile': {'type': 'disabled'}, "
        "'sandboxCwd': 'file:///tmp'}, "
        "'codex/sandbox-launcher': {'codexExecutable': sys.argv[1]}}; "
        "assert SandboxRequest.from_meta(meta).command(['true'])[0] == sys.argv[1]; "
        "print(sorted(m for m in ('psutil', 'filelock', 'launcher_probe.host.probe') "
        "if m in sys.modules))"
    )
    checked = subprocess.run(
        [sys.executable, "-c", code, codex],
        env=isolated.env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert (checked.returncode, checked.stdout) == (0, "[]\n"), checked.stderr  # no probe ran


def test_a_shell_is_not_the_codex_cli() -> None:
    sh = shutil.which("sh")
    assert sh is not None
    verdict = verify_launcher(sh)
    assert verdict.reason is Reason.NOT_CODEX
    assert "is not named codex or codex-" in verdict.detail


def test_a_real_elf_under_another_name_is_refused(tmp_path: Path, isolated: HostEnv) -> None:
    verdict = verify_launcher(str(elf_named(tmp_path, "true")))
    assert verdict.reason is Reason.NOT_CODEX
    assert cached_records(isolated) == {}  # refused before any probe


def test_a_symlink_named_codex_to_another_program_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "bin" / "codex"
    link.parent.mkdir()
    link.symlink_to(elf_named(tmp_path / "elsewhere", "true"))
    verdict = verify_launcher(str(link))
    assert verdict.reason is Reason.NOT_CODEX
    assert verdict.detail.startswith(f"{tmp_path}/elsewhere/true is not named codex")


def test_a_script_named_codex_is_refused_and_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    verdict = verify_launcher(str(script_named(tmp_path / "bin", "codex", marker)))
    assert verdict.reason is Reason.WRONG_PLATFORM
    assert "is a #! script, not a native executable" in verdict.detail
    assert not marker.exists()


def test_the_fake_codex_as_a_script_is_refused_and_never_run(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    fake = install_fake_codex(tmp_path / "bin", script=True)
    verdict = verify_launcher(str(fake.path))
    assert verdict.reason is Reason.WRONG_PLATFORM
    assert fake.calls() == []


def test_the_native_fake_codex_is_probed_once_and_passes(fake_codex: FakeCodex) -> None:
    assert verify_launcher(str(fake_codex.path)).ok
    assert verify_launcher(str(fake_codex.path)).ok  # the second from the verdict cache
    assert fake_codex.probe_count() == 1


def test_a_foreign_architecture_is_refused(tmp_path: Path) -> None:
    verdict = verify_launcher(str(foreign_elf(tmp_path / "bin")))
    assert verdict.reason is Reason.WRONG_PLATFORM
    assert f"ELF file for {FOREIGN_NAME}" in verdict.detail


def test_a_native_file_named_codex_must_pass_the_probe(tmp_path: Path, isolated: HostEnv) -> None:
    impostor = elf_named(tmp_path / "bin", "codex")  # `true`: plausible by name and format
    verdict = verify_launcher(str(impostor))
    assert verdict.reason is Reason.NOT_CODEX
    assert "--version" in verdict.detail
    record = cached_records(isolated)[str(impostor)]  # probed once, stored for the host
    assert (record["ok"], record["reason"]) == (False, "not_codex")


def test_the_path_rules_come_first(tmp_path: Path) -> None:
    shared = elf_named(tmp_path / "bin", "codex")
    shared.chmod(0o777)
    assert verify_launcher(str(shared)).reason is Reason.UNSAFE_PERMISSIONS
    assert verify_launcher(str(tmp_path / "absent" / "codex")).reason is Reason.NOT_FOUND


def test_a_target_triple_name_is_accepted(real_codex: Path, tmp_path: Path) -> None:
    target = host_target()
    assert target is not None
    good = tmp_path / f"codex-{target.triple}"
    good.symlink_to(real_codex)
    assert verify_launcher(str(good)).ok
    other = "aarch64-apple-darwin" if "linux" in target.triple else "x86_64-unknown-linux-musl"
    bad = tmp_path / f"codex-{other}"
    bad.symlink_to(real_codex)
    assert verify_launcher(str(bad)).reason is Reason.NOT_CODEX


def test_a_verified_path_changed_afterwards_is_verified_afresh(
    linked_codex: Path, tmp_path: Path
) -> None:
    assert verify_launcher(str(linked_codex)).ok
    assert verify_launcher(str(linked_codex)).ok  # remembered in-process
    impostor = elf_named(tmp_path / "other", "codex")
    replacement = linked_codex.with_name("new-link")
    replacement.symlink_to(impostor)
    os.replace(replacement, linked_codex)  # same path, now another binary
    verdict = verify_launcher(str(linked_codex))
    assert verdict.reason is Reason.NOT_CODEX  # not the remembered verdict


@pytest.mark.parametrize("path", ["/tmp/\ud800/codex", "/tmp/bad\udcff/codex"])
def test_a_path_that_is_not_utf8_is_refused(path: str) -> None:
    assert verify_launcher(path).reason is Reason.NOT_UTF8
