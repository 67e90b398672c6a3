"""The host's per-turn metadata checked once (``HostMeta``) and reused for every call of the
turn: the same ``_meta`` and the same refusals as the mapping checked on each call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from launcher_probe.contract import SANDBOX_LAUNCHER_KEY, SANDBOX_STATE_KEY
from launcher_probe.host.decision import Published
from launcher_probe.host.inject import (
    HostMeta,
    MetaRejected,
    ServerDescription,
    Transport,
    dumps_meta,
)
from tests.host.test_inject import (
    CAPABLE,
    METHODS,
    STATE,
    meta_for,
    published_at,
    stdio,
    write_binary,
)

HOST = {"threadId": "t1", "x-codex-turn-metadata": {"turn": 3, "cwd": "/w"}, "callId": "c1"}


@pytest.fixture
def published(tmp_path: Path) -> Published:
    return published_at(write_binary(tmp_path / "codex"))


CALLERS: list[Any] = [
    None,
    {},
    {"trace": "x", "nested": {"a": [1, 2]}},
    {"_codex_apps": {"other": 1}},
]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("name", ["files", "codex_apps"])
@pytest.mark.parametrize("caller", CALLERS)
def test_a_checked_turn_builds_what_the_mapping_builds(
    method: str, name: str, caller: Any, published: Published
) -> None:
    server = ServerDescription(name, Transport.STDIO, CAPABLE)
    turn = HostMeta(HOST)
    for _ in range(2):  # reused: the second call of the turn as the first
        checked = meta_for(
            method,
            server,
            sandbox_state=STATE,
            launcher=published,
            caller_meta=caller,
            host_meta=turn,
            progress_token=7,
        )
        each = meta_for(
            method,
            server,
            sandbox_state=STATE,
            launcher=published,
            caller_meta=caller,
            host_meta=HOST,
            progress_token=7,
        )
        assert dumps_meta(checked) == dumps_meta(each)
        assert checked.meta[SANDBOX_LAUNCHER_KEY] == {
            "codexExecutable": str(published.descriptor.codex_executable)
        }


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(
    "spelled", ["callId", "threadId", " CallId", "x-codex-turn-metadata\u0000"]
)
def test_a_checked_turn_reserves_its_keys_from_the_caller(method: str, spelled: str) -> None:
    turn = HostMeta(HOST)
    with pytest.raises(MetaRejected, match=f"reserved {METHODS[method]} metadata key"):
        meta_for(method, stdio(), caller_meta={spelled: "forged"}, host_meta=turn)


@pytest.mark.parametrize("key", [SANDBOX_STATE_KEY, SANDBOX_LAUNCHER_KEY, "progressToken"])
def test_a_turn_that_sets_what_the_injector_sets_is_refused_when_checked(key: str) -> None:
    with pytest.raises(MetaRejected, match=f"host metadata must not set {key}"):
        HostMeta({key: {}})


def test_a_turn_is_a_copy_taken_when_checked(published: Published) -> None:
    """Like a SandboxState: changing the host's mapping afterwards changes nothing sent."""
    source: dict[str, Any] = {"threadId": "t1"}
    turn = HostMeta(source)
    source["threadId"], source[SANDBOX_STATE_KEY] = "t2", "forged"
    result = meta_for(
        "tools/call", stdio(), sandbox_state=STATE, launcher=published, host_meta=turn
    )
    assert result.meta["threadId"] == "t1"
    assert result.meta[SANDBOX_STATE_KEY] == STATE
