"""In process, for any input: ``walk`` finds each member's text exactly, ``leading`` and
``trailing`` read only members a message's first or last bytes hold whole, and the
rewriter's splice changes ``_meta`` alone, keeping every other part of the message."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from launcher_probe.contract import SANDBOX_STATE_KEY, SANDBOX_STATE_META_KEY, Reason
from launcher_probe.host.decision import Withheld
from launcher_probe.host.meta_input import key_form
from launcher_probe.proxy.capabilities import ServerCapabilities
from launcher_probe.proxy.launcher import BoundLauncher
from launcher_probe.proxy.members import MAX_TRAILING, leading, trailing, walk
from launcher_probe.proxy.notes import Notes
from launcher_probe.proxy.rewrite import Rewriter
from launcher_probe.sandbox_policy import Policy

scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=12,
)
objects = st.dictionaries(st.text(max_size=6), values, max_size=5)
spacing = st.sampled_from([(",", ":"), (", ", ": "), (" ,  ", " :\t")])


@given(objects, spacing)
def test_walk_finds_every_member_text(value: dict[str, Any], separators: tuple[str, str]) -> None:
    text = json.dumps(value, separators=separators, ensure_ascii=False)
    walked = walk(text)
    assert {member.key: member.value for member in walked.members} == value
    assert text[walked.open] == "{" and text[walked.close] == "}"
    for member in walked.members:
        assert json.loads("{" + member.text(text) + "}") == {member.key: member.value}


@given(objects, spacing, st.data())
def test_a_messages_first_and_last_bytes_give_only_whole_members(
    value: dict[str, Any], separators: tuple[str, str], data: st.DataObject
) -> None:
    """Whatever the cut: ``leading`` gives the first members, as ``walk`` reads them, that
    the first bytes hold whole (never a number cut short), and every key read; ``trailing``
    gives the last plain members the last bytes hold, as written."""
    text = json.dumps(value, separators=separators, ensure_ascii=False)
    members = walk(text).members
    cut = data.draw(st.integers(0, len(text)))
    first, keys = leading(text[:cut])
    assert [(m.key, m.value) for m in first] == [(m.key, m.value) for m in members[: len(first)]]
    assert all(m.end < cut for m in first)  # a separator after each: the value is whole
    assert keys[: len(first)] == [m.key for m in first] and len(keys) <= len(first) + 1
    expected: list[tuple[str, str]] = []  # from the last: each plain one after a kept comma
    for index in reversed(range(1, len(members))):
        member = members[index]
        written = text[member.start : member.end]  # key and value, escapes as written
        plain = not isinstance(member.value, (dict, list)) and "\\" not in written
        comma = text.rindex(",", 0, member.start)
        if not plain or comma < cut or len(expected) == MAX_TRAILING:
            break
        expected.append((member.key, text[member.value_start : member.end]))
    assert trailing(text[cut:]) == expected


def _not_reserved(key: str) -> bool:
    forms = {key_form(name) for name in ("codex/sandbox-state", "codex/sandbox-state-meta",
                                         "codex/sandbox-launcher", "progressToken")}  # fmt: skip
    return key_form(key) not in forms


host_metas = st.dictionaries(st.text(max_size=6).filter(_not_reserved), values, max_size=4)


@settings(max_examples=300)
@given(host_metas, st.booleans(), values, st.sampled_from(["first", "last", None]), spacing)
def test_the_splice_changes_meta_alone(
    host: dict[str, Any],
    with_token: bool,
    arguments: Any,
    meta_at: str | None,
    separators: tuple[str, str],
) -> None:
    """Every byte but ``_meta``'s value (or, when the host sent none, the member put first
    in ``params``) reaches the server as it came, non-ASCII text on either side too."""
    capabilities = ServerCapabilities(lambda _: None, lambda: None)
    capabilities.experimental = {"codex/sandbox-state": {}}
    state = Policy("read-only", "/srv").state()
    launcher = BoundLauncher(
        Withheld(Reason.NOT_FOUND, "none here"), lambda: Withheld(Reason.NOT_FOUND, "")
    )
    rewriter = Rewriter(capabilities, launcher, state, Notes(), answer=_unexpected)
    meta = {**host, **({"progressToken": 5} if with_token else {})}
    params: dict[str, Any] = {"name": "t", "arguments": arguments}
    if meta_at is not None:
        params = {"_meta": meta, **params} if meta_at == "first" else {**params, "_meta": meta}
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}

    def line_of(value: object) -> bytes:
        return json.dumps(value, separators=separators, ensure_ascii=False).encode() + b"\n"

    line = line_of(message)
    out = rewriter.from_host(line)
    expected = {**host, SANDBOX_STATE_KEY: state.value, SANDBOX_STATE_META_KEY: state.value}
    if with_token:
        expected["progressToken"] = 5
    if meta_at is None:
        expected = {SANDBOX_STATE_KEY: state.value, SANDBOX_STATE_META_KEY: state.value}
    got = json.loads(out)
    assert list(got["params"]["_meta"]) == list(expected)
    assert got["params"]["_meta"] == expected
    if meta_at is None:
        at = line.index(b"{", line.index(b'"params"')) + 1
        added = len(out) - len(line)
        assert out[:at] + out[at + added :] == line
    else:
        mark = "\0" * 9  # longer than any text drawn: it stands nowhere else
        marked = line_of({**message, "params": {**params, "_meta": mark}})
        before, after = marked.split(json.dumps(mark).encode())
        assert out.startswith(before) and out.endswith(after)
    got["params"].pop("_meta")
    params.pop("_meta", None)
    assert got == message


def _unexpected(message: bytes) -> bool:
    raise AssertionError(f"the proxy answered {message!r}")


def _kept(answers: list[bytes]) -> Callable[[bytes], bool]:
    """An ``answer`` for a Rewriter that keeps what the proxy answers in ``answers``."""

    def answer(message: bytes) -> bool:
        answers.append(message)
        return True

    return answer


def test_a_look_alike_of_a_sandbox_key_is_refused_with_an_error() -> None:
    capabilities = ServerCapabilities(lambda _: None, lambda: None)
    capabilities.experimental = {"codex/sandbox-state": {}}
    withheld = Withheld(Reason.NOT_FOUND, "none here")
    answers: list[bytes] = []
    rewriter = Rewriter(
        capabilities,
        BoundLauncher(withheld, lambda: withheld),
        Policy().state(),
        Notes(),
        answer=_kept(answers),
    )
    line = (
        b'{"jsonrpc":"2.0","id":"a1","method":"tools/call",'
        b'"params":{"name":"t",'
        b'"_meta":{"Codex/Sandbox-Launcher ":{"codexExecutable":"/bin/sh"}}}}\n'
    )
    assert rewriter.from_host(line) == b""
    (answer,) = answers
    assert answer.endswith(b"\n")
    error = json.loads(answer)
    assert (error["id"], error["error"]["code"]) == ("a1", -32602)
    assert 'codex/sandbox-launcher (as \\"Codex/Sandbox-Launcher \\")' in answer.decode()


def test_the_hosts_keys_checked_once_give_each_call_what_a_fresh_check_gives() -> None:
    """The rewriter keeps the host's keys checked by their text; each call of the turn gets
    the ``_meta`` a rewriter seeing them for the first time gives, and a refused set of keys
    is refused on every call."""
    capabilities = ServerCapabilities(lambda _: None, lambda: None)
    capabilities.experimental = {"codex/sandbox-state": {}}
    withheld = Withheld(Reason.NOT_FOUND, "none here")

    answers: list[bytes] = []

    def rewriter() -> Rewriter:
        launcher = BoundLauncher(withheld, lambda: withheld)
        return Rewriter(capabilities, launcher, Policy().state(), Notes(), answer=_kept(answers))

    kept = rewriter()
    for number in range(3):
        line = (
            b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"t",'
            b'"_meta":{"threadId":"t1","progressToken":%d,"x":{"turn":1}}}}\n' % (number, number)
        )
        assert kept.from_host(line) == rewriter().from_host(line) != line
    forged = (
        b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"t",'
        b'"_meta":{"threadId":"t1","ProgressToken ":1}}}\n'
    )
    assert kept.from_host(forged) == kept.from_host(forged) == b""  # refused, each time
    assert [json.loads(answer)["id"] for answer in answers] == [9, 9]


def test_a_long_server_message_is_said_unread_only_while_nothing_is_learnt() -> None:
    """Once the capabilities are learnt, a discovery answer still awaited (the server
    answered it with an error) makes no long message worth a note."""
    said: list[bool] = []
    capabilities = ServerCapabilities(lambda _: None, lambda: said.append(True))
    capabilities.expect(1)
    assert capabilities.passes() and said == [True]
    result: dict[str, Any] = {"capabilities": {"experimental": {SANDBOX_STATE_KEY: {}}}}
    capabilities.observe(json.dumps({"jsonrpc": "2.0", "id": 1, "result": result}).encode())
    capabilities.expect(2)
    assert capabilities.passes() and said == [True]
