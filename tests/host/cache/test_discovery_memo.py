"""The discovery memo: a warm plain ``resolve`` (no operator path) answers without
discovery, exactly as discovery would, and any change of what decided it is seen."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from launcher_probe.host.cache import discovery_memo as memo
from launcher_probe.host.cache.memory import MEMORY
from launcher_probe.host.cache.store import memo_lock_file
from tests.commands.test_plain_resolve import (
    CONSOLE_SCRIPT,
    HEAVY,
    imported,
    run,
    without_importtime,
)
from tests.conftest import ROOT, HostEnv
from tests.fakes import FakeCodex, install_fake_codex
from tests.host.memo_check import forget_memos, memo_agrees_with_discovery, memos, timeless

DISCOVERY = "launcher_probe.host.discovery"


def installed_at(directory: Path) -> FakeCodex:
    """A fake codex in ``directory``, made (0755) with its parents."""
    directory.mkdir(mode=0o755, parents=True)
    directory.chmod(0o755)
    return install_fake_codex(directory)


@pytest.fixture
def on_path(
    host_env: HostEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[FakeCodex]:
    """A fake codex in a PATH directory of its own, before the system ones."""
    fake = installed_at(tmp_path / "path-bin")
    path = f"{fake.path.parent}:{host_env.env['PATH']}"
    host_env.env["PATH"] = path
    monkeypatch.setenv("PATH", path)
    yield fake


def resolve(env: dict[str, str]) -> tuple[dict[str, object], bool]:
    """``resolve --json`` in a fresh process: the decision, and whether it discovered."""
    code, out, err, modules = run(env, "resolve", "--json")
    assert code == 0, err
    return json.loads(out), DISCOVERY in modules


def _from_a_new_shell(env: dict[str, str], name: str) -> tuple[dict[str, object], bool]:
    """:func:`resolve`, from a shell of its own (another parent each time, as
    ``$(launcher-probe resolve)`` in a script has) whose command line is ``sh -c ... NAME``."""
    done = subprocess.run(
        ["sh", "-c", '"$PY" -X importtime -m launcher_probe resolve --json; exit "$?"', name],
        env={**env, "PY": sys.executable},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, without_importtime(done.stderr)
    return json.loads(done.stdout), DISCOVERY in imported(done.stderr)


def test_a_resolve_from_a_new_shell_each_time_answers_from_the_memo(
    host_env: HostEnv, on_path: FakeCodex
) -> None:
    """The shell that started it could not be the harness: whichever it is decides nothing."""
    first, discovered = _from_a_new_shell(host_env.env, "sh")
    assert discovered and len(memos()) == 1
    second, discovered = _from_a_new_shell(host_env.env, "sh")
    assert not discovered
    assert timeless(second) == timeless(first)
    assert on_path.probe_count() == 1


def test_an_ancestor_that_could_be_the_harness_is_compared_exactly(
    host_env: HostEnv, on_path: FakeCodex
) -> None:
    """An ancestor whose command line names codex (as an npm shim's Node does) is the same
    process, or a miss: another one named so discovers again."""
    _from_a_new_shell(host_env.env, "codex")
    second, discovered = _from_a_new_shell(host_env.env, "codex")
    assert discovered
    assert second["source"] == "path"


def test_the_memo_marks_what_the_harness_can_take() -> None:
    """Every name ``harness.py`` takes holds the memo's mark: the executable's name."""
    from launcher_probe.host.discovery.candidate import EXECUTABLE

    assert memo.HARNESS_MARK == EXECUTABLE


def test_a_warm_plain_resolve_answers_from_the_memo(host_env: HostEnv, on_path: FakeCodex) -> None:
    first, discovered = resolve(host_env.env)
    assert discovered and first["source"] == "path" and len(memos()) == 1
    second, discovered = resolve(host_env.env)
    assert not discovered
    forget_memos()
    third, discovered = resolve(host_env.env)
    assert discovered and second == third
    assert on_path.probe_count() == 1


def _standalone(host_env: HostEnv, tmp_path: Path) -> None:
    installed_at(host_env.home / ".local" / "bin")


def _earlier_path_entry(host_env: HostEnv, tmp_path: Path) -> None:
    fake = installed_at(tmp_path / "earlier")
    host_env.env["PATH"] = f"{fake.path.parent}:{host_env.env['PATH']}"


def _config(host_env: HostEnv, tmp_path: Path) -> None:
    fake = installed_at(tmp_path / "configured")
    config = host_env.config_dir / "launcher-probe" / "config.toml"
    config.parent.mkdir(mode=0o700)
    config.write_text(f'codex = "{fake.path}"\n')


def installer_block(directory: Path) -> str:
    """The PATH block the Codex installer adds to a shell profile, for ``directory``."""
    return (
        f'# >>> Codex installer >>>\nexport PATH="{directory}:$PATH"\n# <<< Codex installer <<<\n'
    )


def _installer_block(host_env: HostEnv, tmp_path: Path) -> None:
    fake = installed_at(tmp_path / "installed")
    (host_env.home / ".bashrc").write_text(installer_block(fake.path.parent))


def _binary_changed(host_env: HostEnv, tmp_path: Path) -> None:
    st = (tmp_path / "path-bin" / "codex").stat()
    os.utime(tmp_path / "path-bin" / "codex", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))


def _variable(host_env: HostEnv, tmp_path: Path) -> None:
    host_env.env["VOLTA_HOME"] = str(tmp_path / "volta")


#: What changes between the memo and the next resolve; each one discovers in full again.
CHANGES: dict[str, Callable[[HostEnv, Path], None]] = {
    "a standalone install appears": _standalone,
    "an earlier PATH entry holds codex": _earlier_path_entry,
    "a config file names another codex": _config,
    "a shell profile gains the installer's PATH block": _installer_block,
    "the binary changed": _binary_changed,
    "a location variable is set": _variable,
}


@pytest.mark.parametrize("change", CHANGES)
def test_any_change_of_what_decided_discovers_again(
    host_env: HostEnv, on_path: FakeCodex, tmp_path: Path, change: str
) -> None:
    resolve(host_env.env)
    CHANGES[change](host_env, tmp_path)
    after, discovered = resolve(host_env.env)
    assert discovered
    forget_memos()
    expected, _ = resolve(host_env.env)  # full discovery, with no memo at all
    assert timeless(after) == timeless(expected)


@pytest.mark.parametrize("garble", ["{not json", json.dumps({"version": 1}), "[]"])
def test_a_bad_memo_is_a_miss(host_env: HostEnv, on_path: FakeCodex, garble: str) -> None:
    resolve(host_env.env)
    (memo_file,) = memos()
    memo_file.write_text(garble)
    decision, discovered = resolve(host_env.env)
    assert discovered and decision["launcher"] == {"codexExecutable": str(on_path.path)}


def test_a_memo_another_user_could_write_is_not_read(host_env: HostEnv, on_path: FakeCodex) -> None:
    resolve(host_env.env)
    (memo_file,) = memos()
    memo_file.chmod(0o622)
    assert resolve(host_env.env)[1]


def test_cache_clear_removes_the_memos(host_env: HostEnv, on_path: FakeCodex) -> None:
    resolve(host_env.env)
    (memo,) = memos()
    claim = Path(memo_lock_file(str(memo)))
    assert claim.is_file()  # the claim of its discovery (``herd.py``), made by the miss
    assert run(host_env.env, "cache", "clear")[0] == 0
    assert memos() == [] and not claim.exists()


def test_a_memo_not_written_for_a_day_goes_at_the_next_ones_write(
    host_env: HostEnv, on_path: FakeCodex
) -> None:
    """An environment that came and went (another PATH entry each session, say) leaves its
    memo behind: once it is ``STALE_MEMO_SECONDS`` old, the write of a new environment's
    memo sweeps it; a younger one stays. Back in that environment, a plain resolve discovers
    in full, answers the same and writes its memo again."""
    from launcher_probe.host.cache.store import STALE_MEMO_SECONDS

    path = host_env.env["PATH"]
    sessions = [{**host_env.env, "PATH": f"{path}:/nonexistent/session-{n}"} for n in range(3)]
    answers, written = [], []
    for env in sessions[:2]:
        before = set(memos())
        answers.append(resolve(env)[0])
        (new,) = set(memos()) - before
        written.append(new)
    old, young = written
    aged = os.lstat(old).st_mtime - STALE_MEMO_SECONDS - 60
    os.utime(old, (aged, aged))

    resolve(sessions[2])

    assert not old.exists() and young.exists() and len(memos()) == 2
    # ... and its lock file (the claim of its discovery) with it: none is left to pile up.
    assert not Path(memo_lock_file(str(old))).exists()
    assert Path(memo_lock_file(str(young))).exists()
    again, discovered = resolve(sessions[0])
    assert discovered and timeless(again) == timeless(answers[0]) and old.exists()


def test_the_memo_reads_every_variable_discovery_reads(
    host_env: HostEnv, on_path: FakeCodex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Discovery under an environment that records each name read: none is missing from
    ``memo.VARIABLES`` (the cache's own location and psutil's debug switch, read when it
    is imported, decide nothing about codex)."""
    from launcher_probe.host.discovery.order import discover

    read: set[str] = set()

    class Recording(dict[str, str]):
        def get(self, key: str, default: object = None) -> object:  # type: ignore[override]
            read.add(key)
            return super().get(key, default)

        def __getitem__(self, key: str) -> str:
            read.add(key)
            return super().__getitem__(key)

        def __contains__(self, key: object) -> bool:
            read.add(str(key))
            return super().__contains__(key)

    monkeypatch.setattr(os, "environ", Recording(os.environ))
    discover()
    assert read - set(memo.VARIABLES) <= {"XDG_CACHE_HOME", "ANDROID_ROOT", "PSUTIL_DEBUG"}
    assert read >= {"PATH", "HOME", "XDG_CONFIG_HOME"}


def test_in_process_the_memo_agrees_with_discovery(host_env: HostEnv, on_path: FakeCodex) -> None:
    assert memo_agrees_with_discovery()
    MEMORY.forget()


def test_a_warm_plain_resolve_through_the_memo_imports_only_what_it_needs(
    host_env: HostEnv, on_path: FakeCodex
) -> None:
    """As a warm ``resolve --codex`` (tests/commands/test_plain_resolve.py): the console
    script's statement in a fresh interpreter without site-packages imports nothing of
    discovery, psutil, platformdirs or the lock; with no glob place before the place
    found, neither glob nor contextlib."""
    resolve(host_env.env)
    env = {**host_env.env, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-S", "-X", "importtime", "-c", CONSOLE_SCRIPT, "resolve"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    loaded = set(imported(done.stderr))
    assert "launcher_probe.host.cache.discovery_memo" in loaded
    assert sorted(loaded & (HEAVY | {"glob", "contextlib"})) == []
    assert on_path.probe_count() == 1
