"""The memory front answers only a path that leads to the native binary by symlinks
alone: behind a shim, dispatcher or wrapper discovery decides again."""

from __future__ import annotations

from pathlib import Path

import pytest

from launcher_probe.host.decision import Published
from launcher_probe.host.resolver import resolve_launcher
from tests.conftest import HostEnv
from tests.fakes import FakeCodex, install_fake_codex


def test_the_memory_front_never_answers_behind_a_shim(
    host_env: HostEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Behind an asdf shim the binary depends on ASDF_DATA_DIR: in one process, the second
    resolve with another data dir gets (and probes) the other binary."""
    fakes: dict[str, FakeCodex] = {}
    for name in ("a", "b"):
        bin_dir = tmp_path / f"asdf-{name}" / "installs" / "nodejs" / "22.12.0" / "bin"
        bin_dir.mkdir(parents=True)
        fakes[name] = install_fake_codex(bin_dir)
    shim = tmp_path / "tools" / "codex"
    shim.parent.mkdir()
    shim.write_text('#!/bin/sh\n# asdf-plugin: nodejs 22.12.0\nexec /opt/asdf exec "codex" "$@"\n')
    shim.chmod(0o755)
    for name in ("a", "b"):
        monkeypatch.setenv("ASDF_DATA_DIR", str(tmp_path / f"asdf-{name}"))
        decision = resolve_launcher(str(shim))
        assert isinstance(decision, Published), decision
        assert decision.descriptor.codex_executable == str(fakes[name].path)
    assert (fakes["a"].probe_count(), fakes["b"].probe_count()) == (1, 1)
