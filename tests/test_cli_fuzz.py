"""Arbitrary JSON arguments to ``meta`` (in-process ``main``): a documented exit code, one
stderr line and no traceback, or one JSON document on stdout. ``exec`` is left out here:
it replaces the process when it succeeds (its files and limits are in
``tests/test_argument_files.py`` and ``tests/test_json_input.py``)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from launcher_probe.cli import main
from tests.conftest import HostEnv

CAPABLE = '{"codex/sandbox-state": {}}'
STATE = '{"permissionProfile":{"type":"disabled"},"sandboxCwd":"file:///tmp/ws"}'
OPTIONS = ["--capabilities", "--state", "--caller-meta", "--host-meta"]

tokens = st.sampled_from(
    [*'[]{}",:\\ 0123456789.eE+-@', "true", "null", '"threadId"', "\\ud800", "é", "\x00"]
)
json_like = st.lists(tokens, max_size=120).map("".join)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=15,
).map(json.dumps)
nested = st.tuples(st.integers(0, 3000), st.sampled_from(["[", '{"a":'])).map(
    lambda pair: pair[1] * pair[0] + "1" + ("]" if pair[1] == "[" else "}") * pair[0]
)
in_state = nested.map(lambda inner: STATE[:-1] + f',"x":{inner}}}')
odd_files = st.sampled_from(["a\x00b", "\ud800", "/", "/dev/null", "/dev/zero", "/proc/self/mem"])
files = (st.text(max_size=12) | odd_files).map(lambda name: "@" + name)
arguments = st.one_of(st.text(max_size=60), json_like, json_values, nested, in_state, files)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    option=st.sampled_from(OPTIONS), text=arguments, transport=st.sampled_from(["stdio", "http"])
)
def test_meta_answers_any_json_argument_with_a_documented_outcome(
    host_env: HostEnv, capfd: pytest.CaptureFixture[str], option: str, text: str, transport: str
) -> None:
    args = {"--capabilities": CAPABLE, "--state": STATE, option: text}
    words = [word for pair in args.items() for word in pair]
    code = main(["meta", "--transport", transport, "--codex", "/nonexistent/codex", *words])
    out, err = capfd.readouterr()
    assert code in (0, 2, 4)
    if code == 0:
        json.loads(out)
        return
    assert out == ""
    assert err.startswith("launcher-probe: ")
    assert err.count("\n") == 1
    assert "Traceback" not in err
