"""Every answer the helper gives from a resolution rests on a replay at most
``REPLAY_INTERVAL`` old, as a warm one does: the caller whose resolution made it, and
those that waited for it (the binary changes between a resolution's last look and its
answer: a log line written, the supervisor closed)."""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from launcher_probe.service.decisions import REPLAY_INTERVAL, DecisionTable, Held, Key
from launcher_probe.service.handlers import Handlers
from launcher_probe.service.protocol import parse_request
from tests.conftest import HostEnv
from tests.fakes import FakeCodex
from tests.service.helper import Helper, connect, read_line, wait_until


def _changed(fake: FakeCodex) -> None:
    """The binary written again (a new mtime): no verdict is about it any more."""
    st = fake.path.stat()
    os.utime(fake.path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))


def _decided(answer: bytes) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(answer)
    return result


def _answered_changing(
    fake: FakeCodex, monkeypatch: pytest.MonkeyPatch, *, every: bool
) -> tuple[Held, bytes]:
    """A new table's ``resolve_answer`` for ``fake``, the binary written again right after
    the table makes a decision (after the resolution's last look, before its answer):
    after the first one, or ``every`` one."""
    table = DecisionTable()
    decide = table._decide

    def decided_then_changed(key: Key, refresh: bool, timeout: float) -> Held:
        held = decide(key, refresh, timeout)
        if every or fake.probe_count() == 1:
            _changed(fake)
        return held

    monkeypatch.setattr(table, "_decide", decided_then_changed)
    return table.resolve_answer(str(fake.path))


def test_a_decision_its_binary_changed_under_before_the_answer_is_made_again(
    host_env: HostEnv, fake_codex: FakeCodex, monkeypatch: pytest.MonkeyPatch
) -> None:
    held, answer = _answered_changing(fake_codex, monkeypatch, every=False)

    assert held.fingerprint is not None and held.fingerprint.still_matches()
    assert _decided(answer)["decision"] == "published"
    assert fake_codex.probe_count() == 2  # the changed binary was verified on its own


def test_a_binary_that_changes_after_every_decision_is_withheld_as_changed(
    host_env: HostEnv, fake_codex: FakeCodex, monkeypatch: pytest.MonkeyPatch
) -> None:
    held, answer = _answered_changing(fake_codex, monkeypatch, every=True)

    assert held.fingerprint is None
    assert (_decided(answer)["decision"], _decided(answer)["reason"]) == (
        "withheld",
        "binary_changed",
    )


def test_a_request_that_waited_for_a_resolution_is_resolved_again_after_a_change(
    host_env: HostEnv, fake_codex: FakeCodex, tmp_path: Path
) -> None:
    """What a waiter gets is checked when it gets it: once the binary changed (longer ago
    than ``REPLAY_INTERVAL``), the answer it waited for is not given (None: the server
    resolves it in a worker)."""
    table = DecisionTable()
    handlers = Handlers(table, socket=str(tmp_path / "s.sock"), activated=False)
    line = json.dumps({"v": 1, "op": "resolve", "codex": str(fake_codex.path)}).encode()
    request = parse_request(line)
    waited: list[Future[Held]] = [Future(), Future()]
    waited[0].set_result(table.resolve(str(fake_codex.path)))

    _changed(fake_codex)
    time.sleep(REPLAY_INTERVAL)  # the documented bound itself, not a synchronisation

    assert handlers.answer_waited(request, waited[0]) is None
    waited[1].set_result(table.resolve(str(fake_codex.path)))  # the binary as it is now
    answer = handlers.answer_waited(request, waited[1])
    assert answer is not None and _decided(answer)["result"]["decision"] == "published"
    assert fake_codex.probe_count() == 2


def test_a_request_joining_a_resolution_that_timed_out_sooner_resolves_with_its_own_deadline(
    helper: Helper, fake_codex: FakeCodex, tmp_path: Path
) -> None:
    """One client asks with a 2 s deadline; another, with the default, joins its
    resolution. The first gets its ``probe_timeout``; the second is not answered with a
    deadline it did not choose: it resolves with its own, and its probe passes."""
    gate = tmp_path / "gate"
    fake_codex.set_fault("slow_start", seconds=60, gate=str(gate), step="version")
    asked = {"v": 1, "op": "resolve", "codex": str(fake_codex.path)}
    with connect(helper.socket) as hasty, connect(helper.socket) as patient:
        hasty.sendall(json.dumps({**asked, "timeout": 2}).encode() + b"\n")
        wait_until(lambda: fake_codex.probe_count() == 1)  # the hasty resolution probes
        patient.sendall(json.dumps(asked).encode() + b"\n")
        first = json.loads(read_line(hasty))
        assert first["result"]["reason"] == "probe_timeout"
        wait_until(lambda: fake_codex.probe_count() == 2)  # the patient one probes itself
        gate.touch()
        second = json.loads(read_line(patient))
    assert second["result"]["decision"] == "published", second
