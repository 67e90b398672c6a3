"""The one strict, bounded JSON parser (issue 9.7 and 9.9): limits, depth, only InvalidJSON."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from launcher_probe.contract import Reason
from launcher_probe.errors import ExitCode, InputRejected
from launcher_probe.host.decision import Withheld
from launcher_probe.host.inject import MetaRejected, ServerDescription, Transport, tool_call_meta
from launcher_probe.json_input import (
    META_LIMITS,
    STATE_LIMITS,
    InvalidJSON,
    JSONLimitExceeded,
    NonStringKey,
    checked_value,
    loads_strict,
)
from launcher_probe.server.request import SandboxRequest
from launcher_probe.state import InvalidSandboxState, SandboxState
from tests.conftest import HostEnv, run_cli

STATE = '{"permissionProfile":{"type":"disabled"},"sandboxCwd":"file:///tmp/ws"}'
#: The issue's example: a state nested about 990 deep reached RecursionError.
DEEP = 990


def nested_text(depth: int, opener: str = "[") -> str:
    """``depth`` arrays (or objects) around a ``1``."""
    if opener == "[":
        return "[" * depth + "1" + "]" * depth
    return '{"a":' * depth + "1" + "}" * depth


def nested_value(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def deep_state_text(depth: int) -> str:
    return STATE[:-1] + f',"x":{nested_text(depth - 1)}}}'


# --- depth -------------------------------------------------------------------------------------


@pytest.mark.parametrize("opener", ["[", "{"])
def test_nesting_up_to_the_limit_parses_and_one_more_is_refused(opener: str) -> None:
    limit = META_LIMITS.max_depth
    assert loads_strict(nested_text(limit, opener), "x") is not None
    with pytest.raises(JSONLimitExceeded, match=f"x is nested deeper than {limit} levels"):
        loads_strict(nested_text(limit + 1, opener), "x")


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    text = json.dumps({"s": "[" * 500 + '\\"{' * 200, "t": "]]]"})
    assert loads_strict(text, "x") == json.loads(text)


@pytest.mark.parametrize("depth", [DEEP, 5000, 100_000])
def test_a_deep_document_is_refused_never_a_recursion_error(depth: int) -> None:
    with pytest.raises(JSONLimitExceeded, match="nested deeper than"):
        loads_strict(nested_text(depth), "--meta")


@pytest.mark.parametrize("depth", [DEEP, 5000])
def test_a_deep_sandbox_state_is_refused_from_every_entry_point(depth: int) -> None:
    text = deep_state_text(depth)
    value = json.loads(STATE) | {"x": nested_value(depth - 1)}
    server = ServerDescription("files", Transport.STDIO, {"codex/sandbox-state": {}})
    withheld = Withheld(Reason.NOT_FOUND, "none")
    calls: list[Callable[[], object]] = [
        lambda: SandboxState.from_text(text),
        lambda: SandboxState.from_value(value),
        lambda: tool_call_meta(server, sandbox_state=text, launcher=withheld),
        lambda: tool_call_meta(server, sandbox_state=value, launcher=withheld),
    ]
    for call in calls:
        with pytest.raises(InvalidSandboxState) as caught:
            call()
        limit = STATE_LIMITS.max_depth
        assert str(caught.value) == f"sandbox state is nested deeper than {limit} levels"
        assert caught.value.exit_code == ExitCode.REFUSED


def test_a_deep_or_cyclic_caller_meta_is_refused() -> None:
    server = ServerDescription("files", Transport.HTTP, {})
    cycle: list[Any] = []
    cycle.append(cycle)
    for caller in ({"a": nested_value(DEEP)}, {"a": cycle}):
        with pytest.raises(MetaRejected, match="caller metadata is nested deeper than 64 levels"):
            tool_call_meta(server, sandbox_state=None, launcher=None, caller_meta=caller)


# --- size --------------------------------------------------------------------------------------


def test_text_over_the_limit_is_refused_before_parsing() -> None:
    limit = META_LIMITS.max_bytes
    fits = '"' + "a" * (limit - 2) + '"'
    assert len(loads_strict(fits, "x")) == limit - 2
    with pytest.raises(JSONLimitExceeded, match=f"x is larger than {limit} bytes"):
        loads_strict(fits + " ", "x")
    with pytest.raises(JSONLimitExceeded):  # the limit counts UTF-8 bytes, not characters
        loads_strict('"' + "é" * (limit // 2) + '"', "x")


def test_a_state_over_its_limit_is_refused() -> None:
    padding = "a" * STATE_LIMITS.max_bytes
    with pytest.raises(InvalidSandboxState, match="larger than 65536 bytes"):
        SandboxState.from_text(STATE[:-1] + f',"pad":"{padding}"}}')


def test_a_value_too_large_to_encode_is_refused_without_encoding_it() -> None:
    """Shared references would encode to gigabytes: the walk stops within the budget."""
    big = "x" * 100_000
    for value in ([big] * 100_000, {"a": [[big] * 1000] * 1000}, 10 ** (4 * 1_100_000)):
        with pytest.raises(JSONLimitExceeded, match="larger than"):
            checked_value(value, "x")


def test_the_injector_refuses_a_meta_a_receiver_would_refuse() -> None:
    """Caller keys and two copies of the state together stay within META_LIMITS."""
    server = ServerDescription("files", Transport.HTTP, {"codex/sandbox-state": {}})
    state = STATE[:-1] + f',"pad":"{"a" * 60_000}"}}'
    caller = {"pad": "b" * (META_LIMITS.max_bytes - 100_000)}
    tool_call_meta(server, sandbox_state=state, launcher=None)
    tool_call_meta(server, sandbox_state=None, launcher=None, caller_meta=caller)
    with pytest.raises(MetaRejected, match="tool call metadata would be larger than 262144 bytes"):
        tool_call_meta(server, sandbox_state=state, launcher=None, caller_meta=caller)


# --- strictness and types ----------------------------------------------------------------------


#: Texts that are no strict JSON, and how the message for each starts.
STRICTNESS = [
    ('{"a": 1e400}', "x number 1e400 is out of range"),
    ('{"s": "1e999", "a": [-2.5E+999]}', "x number -2.5E+999 is out of range"),
    ('{"a": NaN}', "x contains NaN, which is not JSON"),
    ('{"a": 1, "b": {"c": 2, "c": 3}}', "x repeats the key 'c'"),
    ('{"a": "\\ud800"}', "x contains a lone surrogate (\\ud800), which is not UTF-8"),
    ('{"a": 1' + "0" * 5000 + "}", "x number is too long: "),
    ("[1,", "x is not valid JSON: "),
    ('{"a": 1} [', "x is not valid JSON: "),
]


@pytest.mark.parametrize(("text", "message"), STRICTNESS)
def test_strictness_messages(text: str, message: str) -> None:
    with pytest.raises(InvalidJSON) as caught:
        loads_strict(text, "x")
    assert str(caught.value).startswith(message)
    assert not isinstance(caught.value, JSONLimitExceeded)


def test_strict_text_is_read_without_json_dataclasses_or_typing() -> None:
    """In a fresh process, strict text parses without importing the json package,
    dataclasses (inspect) or typing; text that is not strict is refused there with the
    messages it gets here, where json is imported (a syntax error imports it then)."""
    script = """
import sys
from launcher_probe.json_input import InvalidJSON, Limits, loads_strict
text = '{"a": [1, 2.5, "x", null, {"b": true}]}'
assert loads_strict(text, "x", Limits(max_bytes=64, max_depth=3)) == {
    "a": [1, 2.5, "x", None, {"b": True}]
}
print(sorted({"json", "dataclasses", "inspect", "typing"} & set(sys.modules)))
for text in sys.argv[1:]:
    try:
        loads_strict(text, "x")
    except InvalidJSON as error:
        print(type(error).__name__, error)
"""
    done = subprocess.run(
        [sys.executable, "-c", script, *(text for text, _ in STRICTNESS)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    expected = ["[]"]
    for text, _ in STRICTNESS:
        with pytest.raises(InvalidJSON) as caught:
            loads_strict(text, "x")
        expected.append(f"{type(caught.value).__name__} {caught.value}")
    assert done.stdout.splitlines() == expected


@pytest.mark.parametrize(
    "value", [{1: "a"}, {"a": {1, 2}}, {"a": b"x"}, {"a": float("inf")}, {"a": "\udcff"}, object()]
)
def test_values_that_are_not_json_are_refused(value: Any) -> None:
    with pytest.raises(InvalidJSON):
        checked_value(value, "x")


@pytest.mark.parametrize("key", [1, None, (1, 2)])
def test_a_key_that_is_no_string_is_named_with_the_key_at_any_depth(key: object) -> None:
    for value in ({key: 0}, {"a": [{"b": {key: 0}}]}):
        with pytest.raises(NonStringKey) as caught:
            checked_value(value, "x")
        assert caught.value.key is key
        assert str(caught.value) == f"x has a {type(key).__name__} key, not a string"


def test_subclasses_of_json_types_are_json() -> None:
    class Text(str):
        pass

    value = {"a": (Text("t"), True, None, 1.5, -(10**30))}
    assert checked_value(value, "x") == '{"a":["t",true,null,1.5,-1000000000000000000000000000000]}'


def test_errors_are_input_rejected() -> None:
    assert issubclass(InvalidJSON, InputRejected)
    assert issubclass(InvalidJSON, ValueError)  # callers written against ValueError still work


# --- property: any text, any value: a result or InvalidJSON, nothing else ----------------------

JSON_TOKENS = st.sampled_from([*'[]{}",:\\ 0123456789.eE+-', "true", "null", "\\ud800", "é"])
JSONISH_TEXT = st.lists(JSON_TOKENS, max_size=200).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(), JSONISH_TEXT))
def test_loads_strict_returns_or_raises_invalid_json(text: str) -> None:
    try:
        value = loads_strict(text, "x")
    except InvalidJSON as error:
        assert "\n" not in str(error)
    else:
        assert json.loads(json.dumps(value)) == value


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text() | st.binary(),
    lambda inner: (
        st.lists(inner) | st.tuples(inner) | st.dictionaries(st.text() | st.integers(), inner)
    ),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None)
@given(JSONISH)
def test_checked_value_returns_json_or_raises_invalid_json(value: Any) -> None:
    try:
        text = checked_value(value, "x")
    except InvalidJSON:
        return
    assert loads_strict(text, "x") == json.loads(text)


# --- the CLI entry points ----------------------------------------------------------------------


def test_exec_refuses_a_deep_meta_in_one_line(host_env: HostEnv) -> None:
    meta = '{"codex/sandbox-state":' + deep_state_text(DEEP) + "}"
    done = run_cli("exec", "--meta", meta, "--", "true", env=host_env.env)
    assert (done.returncode, done.stdout) == (ExitCode.REFUSED, "")
    assert done.stderr == "launcher-probe: --meta is nested deeper than 64 levels\n"


@pytest.mark.parametrize("depth", [40, DEEP])
def test_the_server_side_finds_a_deep_state_unusable(depth: int) -> None:
    state = json.loads(STATE) | {"x": nested_value(depth - 1)}
    request = SandboxRequest.from_meta({"codex/sandbox-state": state})
    assert request.state is None
    assert (
        request.state_problem
        == "sandbox state unusable: sandbox state is nested deeper than 32 levels"
    )
