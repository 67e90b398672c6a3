"""The injector's rules (issue 5), one table row each."""

from __future__ import annotations

import copy
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from launcher_probe.contract import (
    HOST_OWNED_KEYS,
    SANDBOX_LAUNCHER_KEY,
    SANDBOX_STATE_KEY,
    SANDBOX_STATE_META_KEY,
    LauncherDescriptor,
    Reason,
)
from launcher_probe.errors import ExitCode, InputRejected
from launcher_probe.host.decision import Decision, Published, Withheld
from launcher_probe.host.inject import (
    MetaRejected,
    MetaResult,
    ServerDescription,
    Transport,
    dumps_meta,
    resource_read_meta,
    tool_call_meta,
)
from launcher_probe.host.paths.fingerprint import Fingerprint
from launcher_probe.state import InvalidSandboxState, SandboxState

CAPABLE: dict[str, Any] = {"codex/sandbox-state": {}}
STATE = {"permissionProfile": {"type": "disabled"}, "sandboxCwd": "file:///tmp/ws"}
WITHHELD = Withheld(Reason.NOT_FOUND, "no Codex CLI anywhere")
METHODS = {"tools/call": "tool call", "resources/read": "resource read"}


def published_at(path: Path) -> Published:
    """A decision publishing ``path``, bound to the file's identity now."""
    return Published(
        LauncherDescriptor(str(path)),
        "test",
        "0.169.0",
        Fingerprint.of(str(path), str(path)),
        from_cache=False,
        probed_at=time.time(),
    )


def write_binary(path: Path) -> Path:
    """A real executable file standing in for a verified Codex CLI."""
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def binary(tmp_path: Path) -> Path:
    return write_binary(tmp_path / "codex")


@pytest.fixture
def published(binary: Path) -> Published:
    return published_at(binary)


def meta_for(
    method: str,
    server: ServerDescription,
    *,
    sandbox_state: Any = None,
    launcher: Decision | None = WITHHELD,
    caller_meta: object = None,
    **extra: Any,
) -> MetaResult:
    """Call the function for ``method``."""
    build = tool_call_meta if method == "tools/call" else resource_read_meta
    return build(
        server, sandbox_state=sandbox_state, launcher=launcher, caller_meta=caller_meta, **extra
    )


def stdio(name: str = "files", capabilities: dict[str, Any] | None = None) -> ServerDescription:
    return ServerDescription(
        name, Transport.STDIO, CAPABLE if capabilities is None else capabilities
    )


# --- rule 1: caller _meta is absent, null, or an object -----------------------------------


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(
    ("caller_meta", "kind"),
    [
        ("x", "string"),
        ("", "string"),
        ([], "sequence"),
        ([{"threadId": "t"}], "sequence"),
        (("a",), "sequence"),
        (0, "number"),
        (-7, "number"),
        (1.5, "number"),
        (True, "boolean"),
        (False, "boolean"),
    ],
)
def test_non_object_caller_meta_is_rejected(method: str, caller_meta: object, kind: str) -> None:
    with pytest.raises(MetaRejected) as caught:
        meta_for(method, stdio(), sandbox_state=STATE, caller_meta=caller_meta)
    assert str(caught.value) == f"invalid type: {kind}, expected a map"
    assert isinstance(caught.value, InputRejected)
    assert caught.value.exit_code == ExitCode.REFUSED


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("caller_meta", [None, {}])
def test_absent_or_null_caller_meta_is_an_empty_object(method: str, caller_meta: object) -> None:
    server = ServerDescription("files", Transport.STDIO, {})
    assert meta_for(method, server, caller_meta=caller_meta).meta == {}


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(
    ("caller_meta", "kind"),
    [
        ({1: "x"}, "number"),
        ({"a": {1: 2}}, "number"),
        ({"a": [{"b": {True: 1}}]}, "boolean"),
        ({"a": {"b": {None: 1}}, "c": float("nan")}, "NoneType"),
        ({"a": {(1,): 2}}, "sequence"),
    ],
)
def test_non_string_keys_are_rejected_in_one_wording_at_any_depth(
    method: str, caller_meta: dict[Any, Any], kind: str
) -> None:
    """JSON text holds no such key (Codex never sees one); a Python caller's is named in
    Codex's words for a wrong type wherever it is."""
    with pytest.raises(MetaRejected) as caught:
        meta_for(method, stdio(), caller_meta=caller_meta)
    assert str(caught.value) == f"invalid type: {kind} key, expected a string"


class _IteratesAnotherKey(dict[Any, Any]):
    """A dict whose iteration names a key it does not hold (``dict()`` copies its items)."""

    def __iter__(self) -> Iterator[Any]:
        return iter([1])


class _ShiftingKeys(Mapping[Any, Any]):
    """A mapping whose keys are strings on the first look, and not on any later one."""

    def __init__(self) -> None:
        self.looks = 0

    def __getitem__(self, key: Any) -> Any:
        return float("nan")

    def __len__(self) -> int:
        return 1

    def __iter__(self) -> Iterator[Any]:
        self.looks += 1
        return iter(["a"] if self.looks == 1 else [1])


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("make", [lambda: _IteratesAnotherKey(a=float("nan")), _ShiftingKeys])
def test_the_fault_named_is_the_one_the_walk_of_the_copy_met(
    method: str, make: Callable[[], Mapping[Any, Any]]
) -> None:
    """The caller's object is looked at once (copied), and the copy's walk says what is
    wrong: NaN here, never a key the caller's object shows on a second look."""
    with pytest.raises(ValueError) as nan:
        json.dumps(float("nan"), allow_nan=False)
    with pytest.raises(MetaRejected) as caught:
        meta_for(method, stdio(), caller_meta=make())
    assert str(caught.value) == f"caller metadata is not JSON: {nan.value}"


# --- rule 2: reserved keys ------------------------------------------------------------------

APPS_ONLY = [
    ({"connector_id": "c"}, "connector_id"),
    ({"link_id": "l"}, "link_id"),
    ({"_codex_apps": {"resource_uri": "ui://x"}}, "_codex_apps.resource_uri"),
    ({"_codex_apps": {"other": 1, "resource_uri": None}}, "_codex_apps.resource_uri"),
]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("key", HOST_OWNED_KEYS)
@pytest.mark.parametrize("server_name", ["files", "codex_apps"])
def test_host_owned_keys_are_reserved_on_every_server(
    method: str, key: str, server_name: str
) -> None:
    caller = {"allowed": 1, key: {"forged": True}}
    with pytest.raises(MetaRejected) as caught:
        meta_for(method, stdio(server_name), sandbox_state=STATE, caller_meta=caller)
    assert str(caught.value) == f"reserved {METHODS[method]} metadata key: {key}"


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(
    ("spelled", "shown"),
    [
        ("codex/sandbox-launcher\u0000", '"codex/sandbox-launcher\\u0000"'),
        ("codex/sandbox-launcher ", '"codex/sandbox-launcher "'),
        ("Codex/Sandbox-Launcher", '"Codex/Sandbox-Launcher"'),
        ("\u200bcodex/sandbox-launcher\t", '"\\u200bcodex/sandbox-launcher\\t"'),
    ],
)
def test_look_alikes_of_reserved_keys_are_refused(method: str, spelled: str, shown: str) -> None:
    with pytest.raises(MetaRejected) as caught:
        meta_for(
            method, stdio(), sandbox_state=STATE, caller_meta={spelled: {"codexExecutable": "/x"}}
        )
    expected = f"reserved {METHODS[method]} metadata key: {SANDBOX_LAUNCHER_KEY} (as {shown})"
    assert str(caught.value) == expected


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(("caller", "key"), APPS_ONLY)
def test_codex_apps_routing_keys_are_reserved_there(
    method: str, caller: dict[str, Any], key: str
) -> None:
    with pytest.raises(MetaRejected) as caught:
        meta_for(method, stdio("codex_apps"), caller_meta=caller)
    assert str(caught.value) == f"reserved {METHODS[method]} metadata key: {key}"


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(("caller", "key"), APPS_ONLY)
def test_codex_apps_routing_keys_pass_elsewhere(
    method: str, caller: dict[str, Any], key: str
) -> None:
    server = ServerDescription("files", Transport.HTTP, {})
    assert meta_for(method, server, caller_meta=caller).meta == caller


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("apps", [{"other": 1}, "not an object", ["resource_uri"]])
def test_codex_apps_object_without_resource_uri_passes(method: str, apps: object) -> None:
    server = ServerDescription("codex_apps", Transport.HTTP, {})
    assert meta_for(method, server, caller_meta={"_codex_apps": apps}).meta == {"_codex_apps": apps}


@pytest.mark.parametrize("method", METHODS)
def test_keys_the_host_sets_are_reserved_from_the_caller(method: str) -> None:
    with pytest.raises(MetaRejected) as caught:
        meta_for(method, stdio(), caller_meta={"callId": "forged"}, host_meta={"callId": "c1"})
    assert str(caught.value) == f"reserved {METHODS[method]} metadata key: callId"


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(
    "key", [SANDBOX_STATE_KEY, SANDBOX_STATE_META_KEY, SANDBOX_LAUNCHER_KEY, "progressToken"]
)
def test_host_meta_may_not_set_what_the_injector_sets(method: str, key: str) -> None:
    with pytest.raises(MetaRejected, match=f"host metadata must not set {key}"):
        meta_for(method, stdio(), sandbox_state=STATE, host_meta={key: {}})


# --- rule 3: originCallId requires threadId ---------------------------------------------------


@pytest.mark.parametrize(
    ("thread_id", "origin_call_id", "error"),
    [
        (None, "call_1", "originCallId requires threadId"),
        ("t1", "call_1", None),
        ("t1", None, None),
        (None, None, None),
    ],
)
def test_origin_call_id_requires_thread_id(
    thread_id: str | None, origin_call_id: str | None, error: str | None
) -> None:
    server = ServerDescription("files", Transport.HTTP, {})

    def read() -> MetaResult:
        return resource_read_meta(
            server,
            sandbox_state=None,
            launcher=None,
            thread_id=thread_id,
            origin_call_id=origin_call_id,
        )

    if error is None:
        assert read().meta == {}  # checked, not copied into _meta (reference section 5)
        return
    with pytest.raises(MetaRejected) as caught:
        read()
    assert str(caught.value) == error


def test_reserved_keys_are_checked_before_the_binding() -> None:
    with pytest.raises(MetaRejected, match="reserved resource read metadata key: threadId"):
        resource_read_meta(
            stdio(), sandbox_state=None, launcher=None, caller_meta={"threadId": "t"},
            origin_call_id="c",
        )  # fmt: skip


# --- rules 4 and 5: sandbox keys and the launcher ---------------------------------------------

SANDBOX_ROWS: list[tuple[dict[str, Any] | None, bool, str, str, bool, bool, Reason | None]] = [
    # capabilities, state given, transport, decision, keys sent, launcher, reason
    (CAPABLE, True, "stdio", "published", True, True, None),
    ({"codex/sandbox-state-meta": {}}, True, "stdio", "published", True, True, None),
    ({"codex/sandbox-state": None}, True, "stdio", "published", True, True, None),
    ({"codex/sandbox-state-meta": False}, True, "stdio", "published", True, True, None),
    ({}, True, "stdio", "published", False, False, Reason.CAPABILITY_NOT_ADVERTISED),
    (None, True, "stdio", "published", False, False, Reason.CAPABILITY_NOT_ADVERTISED),
    ({"codex/auth-change": {}}, True, "stdio", "published", False, False,
     Reason.CAPABILITY_NOT_ADVERTISED),
    (CAPABLE, False, "stdio", "published", False, False, Reason.NO_SANDBOX_STATE),
    ({}, False, "stdio", "published", False, False, Reason.CAPABILITY_NOT_ADVERTISED),
    (CAPABLE, True, "http", "published", True, False, Reason.TRANSPORT_NOT_STDIO),
    (CAPABLE, True, "remote", "published", True, False, Reason.TRANSPORT_NOT_STDIO),
    (CAPABLE, True, "stdio", "withheld", True, False, Reason.NOT_FOUND),
    (CAPABLE, True, "stdio", "touched", True, False, Reason.BINARY_CHANGED),
    (CAPABLE, True, "stdio", "replaced", True, False, Reason.BINARY_CHANGED),
    (CAPABLE, True, "stdio", "removed", True, False, Reason.BINARY_CHANGED),
]  # fmt: skip


def decision_in_state(kind: str, binary: Path) -> Decision:
    """A decision made now; for touched/replaced/removed the binary changes afterwards."""
    if kind == "withheld":
        return WITHHELD
    decision = published_at(binary)
    if kind == "touched":
        stat = binary.stat()
        os.utime(binary, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    elif kind == "replaced":
        write_binary(binary.with_name("new")).replace(binary)
    elif kind == "removed":
        binary.unlink()
    return decision


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(
    ("capabilities", "with_state", "transport", "kind", "keys_sent", "launcher", "reason"),
    SANDBOX_ROWS,
)
def test_sandbox_keys_and_launcher(
    binary: Path,
    method: str,
    capabilities: dict[str, Any] | None,
    with_state: bool,
    transport: str,
    kind: str,
    keys_sent: bool,
    launcher: bool,
    reason: Reason | None,
) -> None:
    decision = decision_in_state(kind, binary)
    server = ServerDescription("files", Transport(transport), capabilities)
    state = STATE if with_state else None
    result = meta_for(
        method, server, sandbox_state=state, launcher=decision, caller_meta={"k": "v"}
    )
    expected: dict[str, Any] = {"k": "v"}
    if keys_sent:
        expected |= {SANDBOX_STATE_KEY: STATE, SANDBOX_STATE_META_KEY: STATE}
    if launcher:
        expected[SANDBOX_LAUNCHER_KEY] = {"codexExecutable": str(binary)}
    assert list(result.meta.items()) == list(expected.items())
    assert result.launcher_included is launcher
    assert result.omitted_reason == reason
    assert bool(result.detail) is (reason is not None)
    if reason is Reason.NOT_FOUND:
        assert result.detail == WITHHELD.detail


def test_a_changed_binary_is_included_again_only_after_a_new_decision(
    published: Published, binary: Path
) -> None:
    server = stdio()
    assert tool_call_meta(server, sandbox_state=STATE, launcher=published).launcher_included
    write_binary(binary.with_name("swapped")).replace(binary)
    stale = tool_call_meta(server, sandbox_state=STATE, launcher=published)
    assert stale.omitted_reason is Reason.BINARY_CHANGED
    assert str(binary) in stale.detail
    fresh = tool_call_meta(server, sandbox_state=STATE, launcher=published_at(binary))
    assert fresh.meta[SANDBOX_LAUNCHER_KEY] == {"codexExecutable": str(binary)}


def test_launcher_callable_runs_only_when_the_launcher_could_be_sent(
    published: Published,
) -> None:
    calls: list[int] = []

    def resolve() -> Decision:
        calls.append(1)
        return published

    http = ServerDescription("files", Transport.HTTP, CAPABLE)
    tool_call_meta(http, sandbox_state=STATE, launcher=resolve)
    tool_call_meta(stdio(capabilities={}), sandbox_state=STATE, launcher=resolve)
    tool_call_meta(stdio(), sandbox_state=None, launcher=resolve)
    with pytest.raises(MetaRejected):
        tool_call_meta(stdio(), sandbox_state=STATE, launcher=resolve, caller_meta="x")
    assert calls == []
    assert tool_call_meta(stdio(), sandbox_state=STATE, launcher=resolve).launcher_included
    assert calls == [1]


def test_a_stdio_server_without_a_decision_is_refused_with_a_documented_error() -> None:
    with pytest.raises(MetaRejected, match="Decision made before its launch"):
        tool_call_meta(stdio(), sandbox_state=STATE, launcher=None)


@pytest.mark.parametrize("launcher", [object(), lambda: "published"])
def test_a_launcher_that_is_no_decision_is_refused(launcher: Any) -> None:
    with pytest.raises(MetaRejected, match="must be a Decision"):
        tool_call_meta(stdio(), sandbox_state=STATE, launcher=launcher)


@pytest.mark.parametrize(
    ("transport", "capabilities"),
    [("ftp", {}), (["stdio"], {}), ("stdio", ["codex/sandbox-state"]), ("stdio", "x")],
)
def test_a_bad_server_description_is_refused(transport: Any, capabilities: Any) -> None:
    with pytest.raises(MetaRejected):
        ServerDescription("files", transport, capabilities)


# --- rule 6: the state is forwarded as its original value -------------------------------------

ODD_STATE_TEXT = (
    '{"sandboxCwd": "file:///tmp/ws",  "permissionProfile": {"type": "disabled"},\n'
    ' "future": {"big": 123456789012345678901234567890123, "one": 1.0, "exp": 1E+2,'
    ' "neg": -0.0, "esc": "\\u00e9\\n", "raw": "é"}, "a": [1, 2.50, null, true]}'
)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(
    "given",
    [
        pytest.param(ODD_STATE_TEXT, id="text"),
        pytest.param(json.loads(ODD_STATE_TEXT), id="object"),
        pytest.param(SandboxState.from_text(ODD_STATE_TEXT), id="SandboxState"),
    ],
)
def test_state_is_forwarded_unchanged_and_in_order(
    published: Published, method: str, given: Any
) -> None:
    result = meta_for(method, stdio(), sandbox_state=given, launcher=published)
    expected = json.loads(ODD_STATE_TEXT)
    for key in (SANDBOX_STATE_KEY, SANDBOX_STATE_META_KEY):
        value = result.meta[key]
        assert value == expected
        assert json.dumps(value) == json.dumps(expected)  # key order and number forms
        assert value is result.meta[SANDBOX_STATE_KEY]
    future = result.meta[SANDBOX_STATE_KEY]["future"]
    assert type(future["big"]) is int
    assert type(future["one"]) is float


def test_dumps_meta_emits_the_original_text_byte_for_byte(published: Published) -> None:
    result = tool_call_meta(
        stdio(), sandbox_state=f" \n{ODD_STATE_TEXT}\n", launcher=published, caller_meta={"a": 1}
    )
    for indent in (None, 2):
        text = dumps_meta(result, indent=indent)
        assert text.count(ODD_STATE_TEXT) == 2
        assert json.loads(text) == result.meta
        assert list(json.loads(text)) == list(result.meta)


@pytest.mark.parametrize("indent", [None, 2, 4])
def test_dumps_meta_is_json_dumps_when_no_state_is_spliced(indent: int | None) -> None:
    caller = {"nested": {"list": [1, {"x": "é"}], "empty": {}, "e": []}, "n": None, "s": "\u2028"}
    result = tool_call_meta(stdio(), sandbox_state=None, launcher=None, caller_meta=caller)
    separators = (",", ":") if indent is None else None
    expected = json.dumps(caller, indent=indent, separators=separators, ensure_ascii=False)
    assert dumps_meta(result, indent=indent) == expected


def test_dumps_meta_compact_is_json_dumps_for_a_compact_state(published: Published) -> None:
    result = tool_call_meta(stdio(), sandbox_state=STATE, launcher=published, caller_meta={"a": 1})
    expected = json.dumps(result.meta, separators=(",", ":"), ensure_ascii=False)
    assert dumps_meta(result) == expected


def test_dumps_meta_serialises_a_state_value_the_host_replaced(published: Published) -> None:
    result = tool_call_meta(stdio(), sandbox_state=ODD_STATE_TEXT, launcher=published)
    result.meta[SANDBOX_STATE_META_KEY] = {"replaced": True}
    text = dumps_meta(result)
    assert text.count(ODD_STATE_TEXT) == 1
    assert json.loads(text)[SANDBOX_STATE_META_KEY] == {"replaced": True}


def test_dumps_meta_explain_shape(published: Published) -> None:
    result = tool_call_meta(ServerDescription("f", Transport.REMOTE, CAPABLE), sandbox_state=STATE,
                            launcher=published)  # fmt: skip
    assert json.loads(dumps_meta(result, indent=2, explain=True)) == {
        "schema": 1,
        "meta": {SANDBOX_STATE_KEY: STATE, SANDBOX_STATE_META_KEY: STATE},
        "included": False,
        "launcher": None,
        "reason": "transport_not_stdio",
        "detail": "the remote transport shares no filesystem with the host",
    }
    empty = tool_call_meta(stdio(capabilities={}), sandbox_state=None, launcher=None)
    assert dumps_meta(empty, explain=True) == (
        '{"schema":1,"meta":{},"included":false,"launcher":null,'
        '"reason":"capability_not_advertised",'
        '"detail":"server does not advertise codex/sandbox-state or codex/sandbox-state-meta"}'
    )


@pytest.mark.parametrize(
    "state",
    [
        '{"a": 1e400}',
        '{"a": -1e400}',
        '{"a": NaN}',
        '{"a": Infinity}',
        '{"a": 1, "a": 2}',
        "[1]",
        '"text"',
        "{",
        "",
        '{"a": 1' + "0" * 5000 + "}",
        {"a": float("nan")},
        '{"a": "\\ud800"}',  # a lone surrogate: valid JSON grammar, not UTF-8
        '{"\\udc00x": 1}',
        {"a": ["\udbff"]},
    ],
)
def test_invalid_state_is_rejected(state: Any) -> None:
    with pytest.raises(InvalidSandboxState) as caught:
        tool_call_meta(stdio(), sandbox_state=state, launcher=WITHHELD)
    assert caught.value.exit_code == ExitCode.REFUSED
    assert "\n" not in str(caught.value)


def test_state_is_checked_even_when_not_sent() -> None:
    server = ServerDescription("files", Transport.HTTP, {})
    with pytest.raises(InvalidSandboxState, match="out of range"):
        tool_call_meta(server, sandbox_state='{"a": 1e400}', launcher=None)


# --- rule 7: caller keys pass through; nothing is mutated -------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_allowed_caller_keys_pass_unchanged_and_the_caller_is_not_mutated(
    published: Published, method: str
) -> None:
    caller = {"z": [1, {"deep": True}], "callId": "c", "progressToken": 7, "_codex_apps": {}}
    before = copy.deepcopy(caller)
    result = meta_for(method, stdio(), sandbox_state=STATE, launcher=published, caller_meta=caller)
    assert caller == before
    assert list(result.meta)[:4] == list(caller)
    assert all(result.meta[key] == value for key, value in caller.items())
    assert result.meta is not caller
    result.meta["added"] = 1
    assert "added" not in caller


def test_host_keys_follow_caller_keys_and_progress_token_comes_last(published: Published) -> None:
    result = resource_read_meta(
        stdio(),
        sandbox_state=STATE,
        launcher=published,
        caller_meta={"progressToken": "caller", "a": 1},
        host_meta={"threadId": "t1"},
        thread_id="t1",
        progress_token=5,
    )
    assert list(result.meta) == [
        "a", "threadId", SANDBOX_STATE_KEY, SANDBOX_STATE_META_KEY, SANDBOX_LAUNCHER_KEY,
        "progressToken",
    ]  # fmt: skip
    assert result.meta["progressToken"] == 5
