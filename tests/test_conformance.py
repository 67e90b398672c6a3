"""Conformance with a real request: the ``tools/call`` Codex CLI 0.169.0 sent to a stdio
server advertising ``codex/sandbox-state`` (``tests/data``, a copy of the shared reference
capture). The injector, given the same server, state and host-owned keys, must produce the
same ``_meta``, key order included; only the launcher path is this test's own binary.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from launcher_probe.contract import SANDBOX_LAUNCHER_KEY, SANDBOX_STATE_KEY
from launcher_probe.host.inject import (
    MetaRejected,
    ServerDescription,
    Transport,
    dumps_meta,
    tool_call_meta,
)
from tests.host.test_inject import published_at, write_binary

CAPTURE = Path(__file__).parent / "data" / "codex-0.169.0-tools-call.json"
#: Where the shared reference lives when a checkout has ``shared/`` beside it.
REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference" / CAPTURE.name
#: The keys Codex sets itself besides the sandbox keys and progressToken, in its order.
HOST_KEYS = ("callId", "x-codex-turn-metadata", "threadId", "sessionId", "windowId", "itemId")


@pytest.fixture
def captured() -> dict[str, Any]:
    """The captured request's ``_meta``."""
    request = json.loads(CAPTURE.read_text(encoding="utf-8"))
    assert request["method"] == "tools/call"
    meta: dict[str, Any] = request["params"]["_meta"]
    return meta


def test_the_capture_is_the_shared_reference() -> None:
    if not REFERENCE.is_file():
        pytest.skip(f"no shared/ checkout beside this one ({REFERENCE.parent} is absent)")
    assert CAPTURE.read_bytes() == REFERENCE.read_bytes()


def test_injector_reproduces_the_captured_meta(captured: dict[str, Any], tmp_path: Path) -> None:
    binary = write_binary(tmp_path / "codex")
    server = ServerDescription("echo-server", Transport.STDIO, {"codex/sandbox-state": {}})
    result = tool_call_meta(
        server,
        sandbox_state=captured[SANDBOX_STATE_KEY],
        launcher=published_at(binary),
        host_meta={key: captured[key] for key in HOST_KEYS},
        progress_token=captured["progressToken"],
    )
    expected = dict(captured)
    expected[SANDBOX_LAUNCHER_KEY] = {"codexExecutable": str(binary)}
    assert list(result.meta) == list(captured)
    assert result.meta == expected
    as_sent = json.dumps(expected, separators=(",", ":"), ensure_ascii=False)
    assert dumps_meta(result) == as_sent
    assert result.launcher_included
    assert result.omitted_reason is None


def test_the_captured_meta_sent_back_by_a_caller_is_refused(captured: dict[str, Any]) -> None:
    """What Codex 0.169.0 forwards on a direct call (a forged state) is refused here."""
    server = ServerDescription("echo-server", Transport.STDIO, {"codex/sandbox-state": {}})
    forged = {"callId": "call_2", SANDBOX_STATE_KEY: captured[SANDBOX_STATE_KEY]}
    with pytest.raises(MetaRejected, match=f"reserved tool call metadata key: {SANDBOX_STATE_KEY}"):
        tool_call_meta(server, sandbox_state=None, launcher=None, caller_meta=forged)
    with pytest.raises(
        MetaRejected, match="reserved tool call metadata key: x-codex-turn-metadata"
    ):
        tool_call_meta(server, sandbox_state=None, launcher=None, caller_meta=captured)
