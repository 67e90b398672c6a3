"""A Codex CLI outside the tested range: published when it passes the probe, with a warning
on every route a decision takes (probe, disk record, memory)."""

from __future__ import annotations

from launcher_probe.host.cache.memory import MEMORY
from launcher_probe.host.decision import Published
from launcher_probe.host.resolver import resolve_launcher
from launcher_probe.host.versions import TESTED_RANGE, untested_version_warning
from tests.conftest import CODEX_VERSIONS, HostEnv, run_cli
from tests.fakes import FakeCodex


def test_the_tested_range_is_the_test_matrix() -> None:
    assert (CODEX_VERSIONS[0], CODEX_VERSIONS[-1]) == TESTED_RANGE


def test_only_versions_outside_the_range_are_warned_about() -> None:
    for version in CODEX_VERSIONS:
        assert untested_version_warning(version) is None
    for version in ("0.168.9", "0.172.0", "1.0.0", "0.171.0-alpha.1", "garbage"):
        warning = untested_version_warning(version)
        assert warning is not None
        assert warning.startswith(f"codex-cli {version} is outside the tested range ")


def test_an_untested_version_is_published_with_a_warning_from_every_route(
    host_env: HostEnv, fake_codex: FakeCodex
) -> None:
    fake_codex.set_fault("wrong_version", text="codex-cli 0.172.0")
    expected = untested_version_warning("0.172.0")
    probed = resolve_launcher(str(fake_codex.path))
    assert isinstance(probed, Published) and not probed.from_cache
    from_memory = resolve_launcher(str(fake_codex.path))
    MEMORY.forget()
    from_disk = resolve_launcher(str(fake_codex.path))
    for decision in (probed, from_memory, from_disk):
        assert isinstance(decision, Published)
        assert decision.version == "0.172.0"
        assert decision.warnings == (expected,)
    done = run_cli("resolve", "--codex", str(fake_codex.path), env=host_env.env)
    assert done.returncode == 0
    assert done.stderr == f"launcher-probe: warning: {expected}\n"


def test_a_tested_version_carries_no_warning(host_env: HostEnv, fake_codex: FakeCodex) -> None:
    decision = resolve_launcher(str(fake_codex.path))
    assert isinstance(decision, Published)
    assert (decision.version, decision.warnings) == ("0.169.0", ())


def test_doctor_shows_the_untested_version(host_env: HostEnv, fake_codex: FakeCodex) -> None:
    fake_codex.set_fault("wrong_version", text="codex-cli 0.172.0")
    done = run_cli("doctor", "--codex", str(fake_codex.path), env=host_env.env)
    assert f"  warning: {untested_version_warning('0.172.0')}\n" in done.stdout
