"""Any ``_meta`` at all: ``from_meta`` and ``command`` raise only the documented errors."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from launcher_probe.contract import SANDBOX_LAUNCHER_KEY, SANDBOX_STATE_KEY, SANDBOX_STATE_META_KEY
from launcher_probe.errors import InputRejected
from launcher_probe.server.request import SandboxRequest

#: Texts with lone surrogates, NULs and paths that exist but are no Codex CLI.
PECULIAR = ["\ud800", "/\ud800", "/tmp/\udcff", "/bin/sh", "/", "/dev/null", "/no/codex", "a\0b"]
texts = st.text(max_size=12) | st.sampled_from(PECULIAR)
keys = texts | st.integers() | st.none() | st.booleans() | st.tuples(st.integers())
values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | texts,
    lambda children: (
        st.lists(children, max_size=3)
        | st.tuples(children)
        | st.dictionaries(keys, children, max_size=3)
    ),
    max_leaves=10,
)
launchers = values | st.fixed_dictionaries({"codexExecutable": st.sampled_from(PECULIAR) | values})
states = values | st.fixed_dictionaries(
    {"permissionProfile": values, "sandboxCwd": values}, optional={"more": values}
)
metas = (
    st.none()
    | values
    | st.fixed_dictionaries(
        {},
        optional={
            SANDBOX_STATE_KEY: states,
            SANDBOX_STATE_META_KEY: states,
            SANDBOX_LAUNCHER_KEY: launchers,
            "callId": values,
        },
    )
)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(meta=metas, opted_out=st.booleans())
def test_only_documented_errors(meta: Any, opted_out: bool) -> None:
    try:
        request = SandboxRequest.from_meta(meta, allow_unsandboxed=opted_out)
        argv = request.command(["true"])
    except InputRejected:
        return
    # Nothing generated here is a verified launcher: only the opt-out yields an argv.
    assert opted_out and argv == ["true"]
