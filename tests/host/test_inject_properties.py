"""Properties of the injector over generated servers, states, decisions and caller metadata."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from launcher_probe.contract import (
    CODEX_APPS_OBJECT_KEY,
    CODEX_APPS_RESERVED_KEYS,
    HOST_OWNED_KEYS,
    SANDBOX_CAPABILITIES,
    SANDBOX_KEYS,
    SANDBOX_LAUNCHER_KEY,
    SANDBOX_STATE_KEY,
    SANDBOX_STATE_META_KEY,
    Reason,
)
from launcher_probe.errors import LauncherProbeError
from launcher_probe.host.decision import Decision, Withheld
from launcher_probe.host.inject import (
    MetaRejected,
    ServerDescription,
    Transport,
    dumps_meta,
    resource_read_meta,
    tool_call_meta,
)
from launcher_probe.host.meta_input import key_form
from tests.host.test_inject import published_at, write_binary

SERVER_NAMES = ("codex_apps", "files", "")
#: Keys no generated caller object holds (the reserved ones, on any server).
NEVER_GENERATED = {*HOST_OWNED_KEYS, *CODEX_APPS_RESERVED_KEYS, CODEX_APPS_OBJECT_KEY}

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
NEVER_GENERATED_FORMS = {key_form(key) for key in NEVER_GENERATED}
caller_objects = st.dictionaries(
    st.text(max_size=12).filter(lambda key: key_form(key) not in NEVER_GENERATED_FORMS),
    json_values,
    max_size=6,
)
states = st.none() | st.dictionaries(st.text(max_size=8), json_values, max_size=5)
capabilities = st.dictionaries(
    st.sampled_from([*SANDBOX_CAPABILITIES, "codex/auth-change", "other"]), json_values, max_size=3
)


@pytest.fixture(scope="module")
def decisions(tmp_path_factory: pytest.TempPathFactory) -> tuple[Decision, ...]:
    """A published decision over a real file, and a withheld one."""
    binary = write_binary(tmp_path_factory.mktemp("inject-properties") / "codex")
    return published_at(binary), Withheld(Reason.NOT_EXECUTABLE, "not executable")


@settings(max_examples=300, deadline=None)
@given(
    method=st.sampled_from(["tools/call", "resources/read"]),
    name=st.sampled_from(SERVER_NAMES),
    transport=st.sampled_from(list(Transport)),
    advertised=capabilities,
    state=states,
    caller=caller_objects,
    published=st.booleans(),
)
def test_injector_properties(
    decisions: tuple[Decision, ...],
    method: str,
    name: str,
    transport: Transport,
    advertised: dict[str, Any],
    state: dict[str, Any] | None,
    caller: dict[str, Any],
    published: bool,
) -> None:
    before = copy.deepcopy(caller)
    server = ServerDescription(name, transport, advertised)
    build = tool_call_meta if method == "tools/call" else resource_read_meta
    decision = decisions[0] if published else decisions[1]
    result = build(server, sandbox_state=state, launcher=decision, caller_meta=caller)
    meta = result.meta

    # every caller key appears unchanged, first and in order; the caller is untouched
    assert caller == before
    assert list(meta)[: len(caller)] == list(caller)
    assert all(meta[key] == value for key, value in caller.items())
    # the two state keys travel together and are identical; only when asked for
    wants = any(capability in advertised for capability in SANDBOX_CAPABILITIES)
    sent = wants and state is not None
    assert (SANDBOX_STATE_KEY in meta) is sent
    assert (SANDBOX_STATE_META_KEY in meta) is sent
    if sent:
        assert meta[SANDBOX_STATE_KEY] == meta[SANDBOX_STATE_META_KEY] == state
    # the launcher: never over http or remote, never null or empty
    if transport is not Transport.STDIO:
        assert SANDBOX_LAUNCHER_KEY not in meta
    assert (SANDBOX_LAUNCHER_KEY in meta) is (sent and transport is Transport.STDIO and published)
    assert set(meta) <= {*caller, SANDBOX_STATE_KEY, SANDBOX_STATE_META_KEY, SANDBOX_LAUNCHER_KEY}
    # what is built serialises to JSON that reads back the same, in the same order
    assert list(json.loads(dumps_meta(result)).items()) == list(meta.items())


@settings(max_examples=100, deadline=None)
@given(state=st.dictionaries(st.text(max_size=8), json_values, min_size=1, max_size=5))
def test_state_text_round_trips_byte_for_byte(
    decisions: tuple[Decision, ...], state: dict[str, Any]
) -> None:
    text = json.dumps(state, indent=1, ensure_ascii=False)
    server = ServerDescription("files", Transport.STDIO, {SANDBOX_CAPABILITIES[0]: {}})
    result = tool_call_meta(server, sandbox_state=text, launcher=decisions[0])
    rendered = dumps_meta(result, indent=2)
    assert rendered.count(text) == 2
    assert json.loads(rendered)[SANDBOX_STATE_META_KEY] == state


#: What a lenient reader drops or ignores: control and format characters, odd spaces.
invisible = st.characters(categories=["Cc", "Cf", "Zs", "Zl", "Zp"])
spaces = st.text(st.sampled_from(" \t\n\r\x0b\x0c\u00a0\u2003\u3000"), max_size=3)


@st.composite
def look_alike(draw: st.DrawFn, key: str) -> str:
    """``key`` with its letters' case flipped at random, whitespace around it and invisible
    characters anywhere in it."""
    chars = [char.swapcase() if draw(st.booleans()) else char for char in key]
    for _ in range(draw(st.integers(0, 3))):
        chars.insert(draw(st.integers(0, len(chars))), draw(invisible))
    return draw(spaces) + "".join(chars) + draw(spaces)


reserved_everywhere = st.sampled_from(HOST_OWNED_KEYS).flatmap(
    lambda key: st.tuples(st.just(key), look_alike(key))
)
reserved_on_apps = st.sampled_from(CODEX_APPS_RESERVED_KEYS).flatmap(
    lambda key: st.tuples(st.just(key), look_alike(key))
)


@settings(max_examples=300, deadline=None)
@given(
    method=st.sampled_from(["tools/call", "resources/read"]),
    name=st.sampled_from(SERVER_NAMES),
    pair=reserved_everywhere,
    caller=caller_objects,
)
def test_a_look_alike_of_a_host_owned_key_is_refused(
    method: str, name: str, pair: tuple[str, str], caller: dict[str, Any]
) -> None:
    reserved, spelled = pair
    server = ServerDescription(name, Transport.STDIO, {SANDBOX_CAPABILITIES[0]: {}})
    build = tool_call_meta if method == "tools/call" else resource_read_meta
    with pytest.raises(MetaRejected) as caught:
        build(server, sandbox_state=None, launcher=None, caller_meta={**caller, spelled: 1})
    noun = "tool call" if method == "tools/call" else "resource read"
    assert str(caught.value).startswith(f"reserved {noun} metadata key: {reserved}")


class _PassesForAnyKey(str):
    """A key that hashes and compares like a harmless key already seen."""

    def __hash__(self) -> int:
        return hash("callId")

    def __eq__(self, other: object) -> bool:
        return True


def test_a_key_that_passes_for_a_seen_one_is_judged_by_its_own_text() -> None:
    """key_form remembers the forms of plain keys; a str subclass is never taken for one."""
    server = ServerDescription("files", Transport.STDIO, {SANDBOX_CAPABILITIES[0]: {}})
    assert tool_call_meta(server, sandbox_state=None, launcher=None, caller_meta={"callId": 1})
    for reserved in (*SANDBOX_KEYS, "threadId"):
        with pytest.raises(MetaRejected, match=f"^reserved tool call metadata key: {reserved}"):
            tool_call_meta(
                server,
                sandbox_state=None,
                launcher=None,
                caller_meta={_PassesForAnyKey(reserved): 1},
            )


@settings(max_examples=200, deadline=None)
@given(
    pair=reserved_on_apps,
    object_key=look_alike(CODEX_APPS_OBJECT_KEY),
    nested_key=look_alike("resource_uri"),
    nested=st.booleans(),
)
def test_a_look_alike_of_a_codex_apps_key_is_refused_there_only(
    pair: tuple[str, str], object_key: str, nested_key: str, nested: bool
) -> None:
    reserved, spelled = pair
    caller = {object_key: {nested_key: "ui://x"}} if nested else {spelled: "c"}
    if nested:
        reserved = f"{CODEX_APPS_OBJECT_KEY}.resource_uri"
    apps = ServerDescription("codex_apps", Transport.STDIO, {})
    with pytest.raises(MetaRejected, match=f"^reserved tool call metadata key: {reserved}"):
        tool_call_meta(apps, sandbox_state=None, launcher=None, caller_meta=caller)
    files = ServerDescription("files", Transport.STDIO, {})
    assert (
        tool_call_meta(files, sandbox_state=None, launcher=None, caller_meta=caller).meta == caller
    )


@settings(max_examples=100, deadline=None)
@given(
    pair=st.sampled_from([*SANDBOX_KEYS, "progressToken"]).flatmap(
        lambda key: st.tuples(st.just(key), look_alike(key))
    )
)
def test_host_meta_may_not_set_a_look_alike_of_what_the_injector_sets(
    pair: tuple[str, str],
) -> None:
    reserved, spelled = pair
    server = ServerDescription("files", Transport.STDIO, {})
    with pytest.raises(MetaRejected, match=f"^host metadata must not set {reserved}:"):
        tool_call_meta(server, sandbox_state=None, launcher=None, host_meta={spelled: 1})


#: Anything a host could pass by mistake, or a caller could smuggle in: JSON and non-JSON.
anything = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text() | st.binary(),
    lambda children: (
        st.lists(children, max_size=4)
        | st.tuples(children)
        | st.dictionaries(st.text(max_size=8) | st.integers() | st.none(), children, max_size=4)
        | st.frozensets(st.integers(), max_size=2)
    ),
    max_leaves=12,
)


@settings(max_examples=500, deadline=None)
@given(
    name=st.sampled_from(SERVER_NAMES) | anything,
    transport=st.sampled_from(list(Transport)) | anything,
    advertised=capabilities | anything,
    state=states | anything | st.text(max_size=40),
    caller=caller_objects | anything,
    host=anything,
    token=st.none() | anything,
    launcher=st.sampled_from(["published", "withheld", "none"]) | anything,
)
def test_any_input_gives_a_result_or_a_documented_error(
    decisions: tuple[Decision, ...],
    name: Any,
    transport: Any,
    advertised: Any,
    state: Any,
    caller: Any,
    host: Any,
    token: Any,
    launcher: Any,
) -> None:
    """Nothing but a ``launcher_probe.errors`` class escapes, whatever the arguments."""
    chosen: dict[str, Any] = {"published": decisions[0], "withheld": decisions[1], "none": None}
    try:
        server = ServerDescription(name, transport, advertised)
        result = tool_call_meta(
            server,
            sandbox_state=state,
            launcher=chosen.get(launcher, launcher) if isinstance(launcher, str) else launcher,
            caller_meta=caller,
            host_meta=host,
            progress_token=token,
        )
    except LauncherProbeError:
        return
    json.loads(dumps_meta(result, explain=True))
