"""Keeping verdicts warm: the helper notices a replaced binary or a loosened directory by
itself, verifies again, and never publishes what changed."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from launcher_probe.host.cache.record import Lifetimes
from launcher_probe.host.decision import Published
from launcher_probe.host.resolver import ResolverConfig
from launcher_probe.service.decisions import MAX_HELD, DecisionTable
from tests.conftest import HostEnv
from tests.fakes import FakeCodex, install_fake_codex
from tests.service.helper import Helper, ask, connect, wait_until


def resolve(helper: Helper, fake: FakeCodex) -> dict[str, Any]:
    answer = helper.ask({"op": "resolve", "codex": str(fake.path)})
    assert answer["ok"] is True, answer
    result: dict[str, Any] = answer["result"]
    return result


def held_inode(helper: Helper) -> int | None:
    (held,) = helper.ask({"op": "status"})["result"]["decisions"]
    decision = held["decision"]
    return None if decision["decision"] != "published" else int(decision["fingerprint"][-1]["ino"])


def test_a_replaced_binary_is_verified_again_without_a_request(
    helper: Helper, fake_codex: FakeCodex
) -> None:
    before = resolve(helper, fake_codex)
    install_fake_codex(fake_codex.path.parent)  # a new file (new inode) at the same path
    new_inode = os.stat(fake_codex.path).st_ino
    assert before["fingerprint"][-1]["ino"] != new_inode
    helper.wait_for_log(f"re-verifying {fake_codex.path}: {fake_codex.path} changed")
    wait_until(lambda: held_inode(helper) == new_inode)  # verified again, nobody asking
    after = resolve(helper, fake_codex)
    assert after["fingerprint"][-1]["ino"] == new_inode
    assert after["from_cache"] is True  # answered warm
    assert fake_codex.probe_count() == 2
    assert helper.ask({"op": "status"})["result"]["counters"]["reverifications"] == 1


def test_a_changed_binary_is_never_published(helper: Helper, fake_codex: FakeCodex) -> None:
    assert resolve(helper, fake_codex)["decision"] == "published"
    fake_codex.set_fault("wrong_version")
    install_fake_codex(fake_codex.path.parent)
    # Asked at once, before the watcher may have looked: the guard sees it per request.
    answer = resolve(helper, fake_codex)
    assert (answer["decision"], answer["reason"]) == ("withheld", "not_codex")


def test_a_directory_opened_to_others_withholds_without_a_request(
    helper: Helper, fake_codex: FakeCodex
) -> None:
    assert resolve(helper, fake_codex)["decision"] == "published"
    fake_codex.path.parent.chmod(0o777)
    helper.wait_for_log(f"directory {fake_codex.path.parent} changed")
    helper.wait_for_log("withheld: unsafe_permissions")
    assert resolve(helper, fake_codex)["reason"] == "unsafe_permissions"


def test_a_verdict_about_to_expire_is_due_for_a_refresh(
    host_env: HostEnv, fake_codex: FakeCodex, tmp_path: Path
) -> None:
    now = [1_000_000.0]
    config = ResolverConfig(
        cache_dir=tmp_path / "cache", lifetimes=Lifetimes(passed=1000.0), clock=lambda: now[0]
    )
    table = DecisionTable(config)
    key = str(fake_codex.path)
    held = table.resolve(key)
    assert isinstance(held.decision, Published)
    assert held.expires_at == held.decision.probed_at + 1000.0
    assert table.warm(key) is held and table.due() == []
    now[0] += 1000.0 - 99.0  # inside the last tenth of its life
    assert table.warm(key) is None
    assert table.due() == [(key, "the verdict expires soon", True)]
    refreshed = table.resolve(key, refresh=True)
    assert isinstance(refreshed.decision, Published)
    assert refreshed.decision.probed_at == now[0]
    assert fake_codex.probe_count() == 2
    assert table.due() == []


def test_the_decisions_held_are_bounded(host_env: HostEnv, tmp_path: Path) -> None:
    table = DecisionTable(ResolverConfig(cache_dir=tmp_path / "cache"))
    paths = [str(tmp_path / f"absent-{number}") for number in range(MAX_HELD + 6)]
    for path in paths:
        assert table.resolve(path).decision.to_json()["reason"] == "not_found"
    held = [item["codex"] for item in table.status()]
    assert held == paths[-MAX_HELD:]


def test_an_answer_is_never_older_than_the_replay_interval(
    helper: Helper, fake_codex: FakeCodex
) -> None:
    """A warm answer rests on a replay of the binary's walk made at most REPLAY_INTERVAL
    before it: a binary touched between two requests that far apart is never answered
    with the fingerprint it had before."""
    from launcher_probe.service.decisions import REPLAY_INTERVAL

    with connect(helper.socket) as client:  # the same line each time: parsed once
        request = {"op": "resolve", "codex": str(fake_codex.path)}
        for touch in range(1, 21):
            before = ask(client, request)["result"]
            stamp = os.stat(fake_codex.path).st_mtime_ns + touch * 1_000_000_000
            os.utime(fake_codex.path, ns=(stamp, stamp))
            time.sleep(REPLAY_INTERVAL)  # the documented bound itself, not a synchronisation
            after = ask(client, request)["result"]
            assert after["decision"] == "published"
            assert (
                after["fingerprint"][-1]["mtime_ns"]
                == stamp
                != before["fingerprint"][-1]["mtime_ns"]
            )
    assert fake_codex.probe_count() == 21  # each touch is a new file to verify
