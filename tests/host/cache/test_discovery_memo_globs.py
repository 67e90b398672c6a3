"""The discovery memo across glob places (nvm versions, editors' extensions): a glob
place before the one found is memoised by matching nothing, a glob place that found it by
its matches, newest first; each is matched again on replay, as discovery matches it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import HostEnv
from tests.host.cache.test_discovery_memo import installed_at, resolve
from tests.host.memo_check import forget_memos, memos, timeless

NVM = ".nvm/versions/node"


def _decided_in_full(host_env: HostEnv) -> dict[str, object]:
    """``resolve --json`` by full discovery (no memo), less its times."""
    forget_memos()
    decision, discovered = resolve(host_env.env)
    assert discovered
    return timeless(decision)


def _through_memo_then_changed(
    host_env: HostEnv, change: Callable[[Path], object]
) -> tuple[dict[str, object], bool]:
    """A warm plain resolve answers from the memo; after ``change(home)``, the next one's
    decision (less its times) and whether it discovered."""
    first, discovered = resolve(host_env.env)
    assert discovered and len(memos()) == 1
    second, discovered = resolve(host_env.env)
    assert not discovered and second["launcher"] == first["launcher"]
    change(host_env.home)
    after, discovered = resolve(host_env.env)
    return timeless(after), discovered


def test_a_known_place_after_glob_places_answers_from_the_memo(host_env: HostEnv) -> None:
    """Linuxbrew's place comes after the nvm, fnm, asdf and mise globs (none matching): an
    MCP host started without the user's PATH finds it there, and the memo answers."""
    fake = installed_at(host_env.home / ".linuxbrew" / "bin")
    decision, discovered = _through_memo_then_changed(host_env, lambda home: None)
    assert not discovered
    assert decision["launcher"] == {"codexExecutable": str(fake.path)}
    assert fake.probe_count() == 1


#: What appears after the memo was written, with Linuxbrew's codex found after the globs,
#: and whether full discovery's answer can change (a miss) or not (a glob after it).
APPEARING: dict[str, tuple[Callable[[Path], object], bool]] = {
    "an nvm install (a glob place before)": (
        lambda home: installed_at(home / NVM / "v22/bin"),
        True,
    ),
    "an nvm version without codex (the glob matches nothing still)": (
        lambda home: (home / NVM / "v21/bin").mkdir(parents=True),
        False,
    ),
    "a VS Code extension (a glob place after)": (
        lambda home: installed_at(
            home / ".vscode/extensions/openai.chatgpt-1.0.0/bin/linux-x86_64"
        ),
        False,
    ),
}


@pytest.mark.parametrize("appearing", APPEARING)
def test_a_match_appearing_at_a_glob_place_before_is_seen(
    host_env: HostEnv, appearing: str
) -> None:
    installed_at(host_env.home / ".linuxbrew" / "bin")
    change, decisive = APPEARING[appearing]
    after, discovered = _through_memo_then_changed(host_env, change)
    assert discovered is decisive
    assert after == _decided_in_full(host_env)


def test_the_newest_match_of_a_glob_place_answers_from_the_memo(host_env: HostEnv) -> None:
    newest = installed_at(host_env.home / NVM / "v20.10.0/bin")
    installed_at(host_env.home / NVM / "v20.9.0/bin")
    decision, discovered = _through_memo_then_changed(host_env, lambda home: None)
    assert not discovered
    assert decision["launcher"] == {"codexExecutable": str(newest.path)}


@pytest.mark.parametrize("version", ["v22.0.0", "v18.0.0"])
def test_another_match_of_the_glob_that_found_it_discovers_again(
    host_env: HostEnv, version: str
) -> None:
    """A newer version is the new answer; an older one changes nothing discovery picks,
    but the glob's matches are no longer those the memo holds."""
    installed_at(host_env.home / NVM / "v20.10.0/bin")
    after, discovered = _through_memo_then_changed(
        host_env, lambda home: installed_at(home / NVM / version / "bin")
    )
    assert discovered
    assert after == _decided_in_full(host_env)


def test_a_memo_glob_no_discovery_could_make_is_a_miss(host_env: HostEnv) -> None:
    """A tampered memo's glob (deep enough to exhaust glob's recursion, or relative) costs
    a full discovery, never an error."""
    fake = installed_at(host_env.home / ".linuxbrew" / "bin")
    resolve(host_env.env)
    (memo_file,) = memos()
    for pattern in ["/nonexistent" + "/*" * 2000, "versions/node/*/bin/codex"]:
        memo = json.loads(memo_file.read_text())
        memo["globs"][0][0] = pattern
        memo_file.write_text(json.dumps(memo))
        decision, discovered = resolve(host_env.env)
        assert discovered and decision["launcher"] == {"codexExecutable": str(fake.path)}


def test_a_path_place_shown_as_a_glob_place_is_judged_as_the_literal_place_it_is(
    host_env: HostEnv,
) -> None:
    """A PATH entry holding a literal ``*`` (an unexpanded one, from a unit file, say) is
    shown as the nvm glob place is: the memo checks it as a path that must stay absent
    (``lstat``), not as that glob (which can disagree: a directory that cannot be listed)."""
    nvm_bin = host_env.home / NVM / "*" / "bin"
    host_env.env["PATH"] = f"{nvm_bin}:{host_env.env['PATH']}"
    installed_at(host_env.home / ".linuxbrew" / "bin")
    resolve(host_env.env)
    (memo_file,) = memos()
    memo = json.loads(memo_file.read_text())
    assert str(nvm_bin / "codex") in memo["absent"]
    assert [pattern for pattern, _ in memo["globs"]].count(
        str(host_env.home / NVM / "*/bin/codex")
    ) == 1
