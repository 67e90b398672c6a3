"""The host's ``tools/call`` and ``resources/read`` with ``_meta`` set by the injector.

Only a message that could name one of the methods the proxy looks at is decoded; every
other message goes on exactly as it came. The operator's policy is the state. A call whose
``_meta`` sets a sandbox key (``codex/sandbox-state``, its ``-meta`` copy, the launcher, or
a look-alike of one) is answered with a JSON-RPC error, not relayed, unless the operator
trusts the host's state (``--trust-host-state``, for Codex): then a state the host sent is
its authority and stays as sent, and only the launcher is added when the host sent none.
So is a message that a server could read otherwise than the proxy does (whatever it
advertised, but to a trusted host's server that takes no state): not UTF-8 (UTF-16 or
UTF-32 too, which some readers take), not JSON, a key there twice or in another case,
text after it, a batch. The host's own keys keep their text, ``progressToken`` last.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from launcher_probe.contract import (
    SANDBOX_LAUNCHER_KEY,
    SANDBOX_STATE_KEY,
    SANDBOX_STATE_META_KEY,
    SANDBOX_STATE_UPDATE_METHOD,
    Reason,
)
from launcher_probe.errors import InputRejected
from launcher_probe.host.inject import (
    PROGRESS_TOKEN_KEY,
    HostMeta,
    MetaResult,
    ServerDescription,
    Transport,
    resource_read_meta,
    tool_call_meta,
)
from launcher_probe.host.meta_input import key_form, sandbox_key_set
from launcher_probe.json_output import dumps_utf8
from launcher_probe.proxy.capabilities import DISCOVERY_METHODS, ServerCapabilities
from launcher_probe.proxy.launcher import BoundLauncher
from launcher_probe.proxy.long_messages import answer_id, glimpse
from launcher_probe.proxy.members import Member, Walked, walk
from launcher_probe.proxy.notes import MAX_SAID, Notes, shortened
from launcher_probe.state import SandboxState

_BUILDERS = {"tools/call": tool_call_meta, "resources/read": resource_read_meta}
_STATE_KEYS = (SANDBOX_STATE_KEY, SANDBOX_STATE_META_KEY)
#: A message that holds none of these cannot name a method the proxy looks at ("\/" is
#: JSON's other spelling of "/"; a "\u" escape can spell any of their characters).
_MARKERS = (
    *(
        spelling
        for name in (*_BUILDERS, *DISCOVERY_METHODS, SANDBOX_STATE_UPDATE_METHOD)
        for spelling in {name.encode(), name.replace("/", "\\/").encode()}
    ),
    b"\\u",
)
#: The members a reader takes the request from; one in another case (``PARAMS``) is read
#: as the member itself by some (Go's encoding/json), so a message holding one is refused.
_MESSAGE_NAMES = {"jsonrpc", "id", "method", "params"}
#: Why a host's own state is refused (said after what set it).
_POLICY_IS_THE_STATE = (
    "the operator's policy is the state through this proxy (a host that sets it, such as "
    "Codex, is trusted with --trust-host-state)"
)
#: JSON-RPC's codes for an invalid request, invalid params and an internal error.
_INVALID_REQUEST, _INVALID_PARAMS, _INTERNAL_ERROR = -32600, -32602, -32603
_COMPACT = (",", ":")
_SPACES = " \t\n\r"
#: The members walked into: the request's params, then their ``_meta``.
_PATH = ("params", "_meta")
#: The host's key sets kept checked (a turn's keys stay the same for each of its calls).
MAX_TURNS = 8
#: The most bytes of one message of the host's that the proxy holds to read it; a longer one
#: is ``dropped`` (or ``passes``).
MAX_HOST_MESSAGE = 64 << 20
#: The host's keys when it sent none but (maybe) a progress token: checked once, here.
_NO_HOST_KEYS = HostMeta({})


#: Characters ``start`` to ``end`` of a message's text replaced with ``text``.
_Splice = tuple[int, int, str]


class _Refused(Exception):
    """The request is answered with a JSON-RPC error, not relayed: ``id_text`` is its id as
    the host wrote it (None: a notification, which gets no answer)."""

    def __init__(self, id_text: str | None, code: int, detail: str) -> None:
        super().__init__(detail)
        self.id_text = id_text
        self.code = code
        self.detail = detail


class Rewriter:
    """``from_host``: one message from the host, as the server is to receive it (nothing,
    when the proxy answers it itself through ``answer``, which says False when it dropped
    the answer)."""

    def __init__(
        self,
        server: ServerCapabilities,
        launcher: BoundLauncher,
        policy_state: SandboxState,
        notes: Notes,
        *,
        answer: Callable[[bytes], bool],
        trust_host_state: bool = False,
    ) -> None:
        self.server = server
        self.launcher = launcher
        self.policy_state = policy_state
        self.notes = notes
        self.answer = answer
        self.trust_host_state = trust_host_state
        #: The state keys' member texts: the policy state never changes.
        self._state_members = {key: _member(key, policy_state.text) for key in _STATE_KEYS}
        self._described = ServerDescription("", Transport.STDIO, server.experimental)
        self._launcher_member: tuple[object, str] | None = None
        #: The host's keys checked, by their exact member texts (``_turn``).
        self._turns: dict[tuple[str, ...], HostMeta] = {}

    def from_host(self, line: bytes | bytearray) -> bytes | bytearray:
        if not _may_name_a_method(line):
            return self._under_awaited_id(line) if self.server.awaiting else line
        try:
            text = line.decode("utf-8")
            splice = self._splice(text, walk(text, 0, _PATH))
        except (UnicodeDecodeError, ValueError, RecursionError) as error:
            if self._host_keys_unseen():
                return line  # the server answers as without the proxy
            reason = "a batch" if line.lstrip().startswith(b"[") else str(error)
            detail = f"a message the proxy cannot read unambiguously ({reason})"
            return self._refused(_Refused("null", _INVALID_REQUEST, detail))
        except _Refused as refused:
            return self._refused(refused)
        if splice is None:
            return line
        start, end = (_byte_offset(line, text, at) for at in splice[:2])
        del text  # the new message is made of the bytes as they came: one copy of them
        with memoryview(line) as came:
            return b"".join((came[:start], splice[2].encode("utf-8"), came[end:]))

    def passes(self) -> bool:
        """Whether a message of the host's past ``MAX_HOST_MESSAGE`` bytes goes on as it
        comes, unread: where a message the proxy cannot read passes as it came
        (``_host_keys_unseen``). Else it is ``dropped``."""
        return self._host_keys_unseen()

    def dropped(self, head: bytes, tail: bytes) -> bytes:
        """In place of a message of the host's past ``MAX_HOST_MESSAGE`` bytes, dropped
        unread (``head``: its first bytes, ``tail``: its last): for an answer to a request
        of the server's, an error under that request's id for the server; else nothing for
        the server, and the host answered under the message's id (null when its first and
        last bytes do not tell it)."""
        seen = glimpse(head, tail)
        detail = f"a message longer than {MAX_HOST_MESSAGE >> 20} MiB"
        if not seen.answers_server or seen.id_text == "null":
            return self._refused(_Refused(seen.id_text, _INVALID_REQUEST, detail))
        self.notes.once(f"an answer of the host's to the server not relayed: {detail}")
        return _error_answer(seen.id_text, _INTERNAL_ERROR, f"the host's answer was {detail}")

    def _under_awaited_id(self, line: bytes | bytearray) -> bytes | bytearray:
        """``line`` (a message that names no method the proxy looks at), unless it is a
        request under the id of a discovery request still unanswered: then refused."""
        try:
            text = line.decode("utf-8")
            members = walk(text).by_key()
        except (UnicodeDecodeError, ValueError, RecursionError):
            return line  # the server answers it as it would without the proxy
        if "method" in members:
            try:
                self._check_not_awaited(text, members.get("id"))
            except _Refused as refused:
                return self._refused(refused)
        return line

    def _check_not_awaited(self, text: str, request_id: Member | None) -> None:
        """_Refused when a request's id is that of a discovery request still unanswered
        (its answer could be taken for the discovery's)."""
        if request_id is not None and self.server.awaits(request_id.value):
            detail = "its id is that of a discovery request still unanswered"
            raise _Refused(_id_text(text, request_id), _INVALID_REQUEST, detail)

    def _told_no_state(self) -> bool:
        """The server said what it advertises, and it takes no sandbox state."""
        return self.server.experimental is not None and not self.server.wants_sandbox_state

    def _host_keys_unseen(self) -> bool:
        """Nothing the host sets in ``_meta`` need be looked at: the host is trusted with
        the state, and the server said it takes none. An untrusted host's call is read
        whatever the server said: what it advertises can be learnt wrong (the SDK's
        low-level ``Server`` leaves its experimental capabilities out of its
        ``server/discover`` answer), and a host's state must never reach it unchecked."""
        return self.trust_host_state and self._told_no_state()

    def _refused(self, refused: _Refused) -> bytes:
        """Nothing for the server; the host gets the error (a notification: said on stderr)."""
        detail = shortened(refused.detail, MAX_SAID)  # it may quote what the host sent
        said = f"refused, not relayed: {detail}"
        if refused.id_text is None:
            self.notes.once(f"a notification {said}")
            return b""
        self.notes.once(f"a request {said}")
        if not self.answer(_error_answer(refused.id_text, refused.code, detail)):
            self.notes.once("the host reads none of the proxy's answers: one was dropped")
        return b""

    def _splice(self, text: str, message: Walked) -> _Splice | None:
        """What to put where in ``text`` for the server (None: it goes on as it came)."""
        if text[message.close + 1 :].strip(_SPACES):
            raise ValueError("text after the message")
        members = message.by_key()
        _in_one_case(members, _MESSAGE_NAMES)
        method, request_id = members.get("method"), members.get("id")
        if method is None:
            return None  # an answer to the server
        self._check_not_awaited(text, request_id)
        if method.value in DISCOVERY_METHODS:
            if request_id is not None:
                self.server.expect(request_id.value)
            return None
        if method.value == SANDBOX_STATE_UPDATE_METHOD and not self.trust_host_state:
            id_text = None if request_id is None else _id_text(text, request_id)
            detail = f"{SANDBOX_STATE_UPDATE_METHOD} sets the state: {_POLICY_IS_THE_STATE}"
            raise _Refused(id_text, _INVALID_PARAMS, detail)
        build = _BUILDERS.get(method.value) if isinstance(method.value, str) else None
        params = members.get("params")
        if build is None or params is None or params.walked is None or self._host_keys_unseen():
            return None
        _in_one_case(params.walked.by_key(), {"_meta"})
        meta = params.walked.find("_meta")
        if meta is not None and meta.value is not None and meta.walked is None:
            return None  # _meta is no object: the server says so
        host = {} if meta is None or meta.walked is None else meta.walked.by_key()
        id_text = None if request_id is None else _id_text(text, request_id)
        if not self.trust_host_state:
            named = sandbox_key_set(host)
            if named is not None:
                detail = f"its _meta sets {named}: {_POLICY_IS_THE_STATE}"
                raise _Refused(id_text, _INVALID_PARAMS, detail)
        if request_id is None or self.server.experimental is None or self._told_no_state():
            return None  # a notification, before the server said, or no state taken: as sent
        try:
            if SANDBOX_STATE_KEY in host or SANDBOX_STATE_META_KEY in host:
                meta_text = self._launcher_added(text, build, host)
            else:
                meta_text = self._policy_applied(text, build, host)
        except InputRejected as error:
            raise _Refused(id_text, _INVALID_PARAMS, str(error)) from error
        if meta_text is None:
            return None
        if meta is not None:
            return meta.value_start, meta.end, meta_text
        at = params.walked.open + 1
        comma = "," if params.walked.members else ""
        return at, at, f'"_meta":{meta_text}{comma}'

    def _description(self) -> ServerDescription:
        """The server as the injector sees it, made again only when its capabilities change.
        The name the host gives it is not known here (it matters for codex_apps only)."""
        experimental = self.server.experimental
        if self._described.capabilities is not experimental:
            self._described = ServerDescription("", Transport.STDIO, experimental)
        return self._described

    def _launcher_text(self, value: object) -> str:
        """The launcher's member text, rendered again only when the launcher changes."""
        cached = self._launcher_member
        if cached is None or cached[0] != value:
            rendered = _member(SANDBOX_LAUNCHER_KEY, dumps_utf8(value, separators=_COMPACT))
            cached = self._launcher_member = (value, rendered)
        return cached[1]

    def _turn(self, text: str, host: dict[str, Member]) -> HostMeta:
        """The host's keys (but its progress token) checked, once for each exact text of
        theirs: a host sends the same keys for every call of a turn."""
        members = [member for member in host.values() if member.key != PROGRESS_TOKEN_KEY]
        if not members:
            return _NO_HOST_KEYS
        texts = tuple(member.text(text) for member in members)
        turn = self._turns.get(texts)
        if turn is None:
            turn = HostMeta({member.key: member.value for member in members})
            if len(self._turns) >= MAX_TURNS:
                self._turns.clear()
            self._turns[texts] = turn
        return turn

    def _built(self, build: Any, state: object, **options: Any) -> MetaResult:
        result: MetaResult = build(
            self._description(), sandbox_state=state, launcher=self.launcher.decision, **options
        )
        if result.omitted_reason is Reason.BINARY_CHANGED:
            self.notes.once(f"launcher left out ({result.omitted_reason}): {result.detail}")
            self.launcher.renew(self.notes)
        elif self.launcher.withheld_path_changed():
            self.launcher.renew(self.notes)
        return result

    def _launcher_added(self, text: str, build: Any, host: dict[str, Member]) -> str | None:
        """The host's ``_meta`` with the launcher added before ``progressToken``, or None
        when the host sent one already or there is none to add."""
        if SANDBOX_LAUNCHER_KEY in host:
            return None
        state = host.get(SANDBOX_STATE_KEY) or host[SANDBOX_STATE_META_KEY]
        result = self._built(build, state.value)
        if not result.launcher_included:
            return None
        parts = [member.text(text) for member in host.values() if member.key != PROGRESS_TOKEN_KEY]
        parts.append(self._launcher_text(result.meta[SANDBOX_LAUNCHER_KEY]))
        token = host.get(PROGRESS_TOKEN_KEY)
        if token is not None:
            parts.append(token.text(text))
        return "{" + ",".join(parts) + "}"

    def _policy_applied(self, text: str, build: Any, host: dict[str, Member]) -> str:
        """``_meta`` for the operator's policy: the host's keys as sent, the injector's after."""
        token = host.get(PROGRESS_TOKEN_KEY)
        result = self._built(
            build,
            self.policy_state,
            host_meta=self._turn(text, host),
            progress_token=None if token is None else token.value,
        )
        parts = []
        for key, value in result.meta.items():
            member = host.get(key)
            if member is not None:
                parts.append(member.text(text))
            elif key in self._state_members:
                parts.append(self._state_members[key])
            elif key == SANDBOX_LAUNCHER_KEY:
                parts.append(self._launcher_text(value))
            else:
                parts.append(_member(key, dumps_utf8(value, separators=_COMPACT)))
        return "{" + ",".join(parts) + "}"


def _may_name_a_method(line: bytes | bytearray) -> bool:
    """Whether a reader of some kind could find a method the proxy looks at in ``line``: it
    holds one of ``_MARKERS``, or a NUL (UTF-16 and UTF-32, which some readers take for
    JSON, spell every JSON text with one; UTF-8 JSON has none), or bytes that are not UTF-8
    (readers decode those each their own way). Such a line is read, and one that is not
    UTF-8 JSON is refused as unreadable."""
    for marker in _MARKERS:
        if marker in line:
            return True
    if b"\0" in line:
        return True
    if line.isascii():
        return False
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _byte_offset(line: bytes | bytearray, text: str, at: int) -> int:
    """Where character ``at`` of ``text`` (``line`` decoded) starts in ``line``; what it
    encodes is the shorter side of ``at`` (a large message's text is not copied whole)."""
    if len(line) == len(text):  # ASCII: a character per byte
        return at
    if at <= len(text) - at:
        return len(text[:at].encode("utf-8"))
    return len(line) - len(text[at:].encode("utf-8"))


def _error_answer(id_text: str, code: int, detail: str) -> bytes:
    """The proxy's own JSON-RPC error under the id ``id_text`` (as written), one line."""
    message = json.dumps(f"launcher-probe proxy: {detail}", ensure_ascii=False)
    error = f'{{"code":{code},"message":{message}}}'
    return f'{{"jsonrpc":"2.0","id":{id_text},"error":{error}}}\n'.encode()


def _member(key: str, value_text: str) -> str:
    return f"{json.dumps(key, ensure_ascii=False)}:{value_text}"


def _id_text(text: str, request_id: Member) -> str:
    """The id to answer ``request_id`` with (``answer_id``)."""
    return answer_id(request_id.value, text[request_id.value_start : request_id.end])


def _in_one_case(members: dict[str, Member], names: set[str]) -> None:
    """ValueError when a key of ``members`` reads as one of ``names`` in another case, or
    with what ``key_form`` drops (Go's encoding/json folds case, U+017F LONG S as ``s`` too)."""
    for key in members:
        if key not in names and key_form(key) in names:
            raise ValueError(f"{json.dumps(key)} beside the member names {sorted(names)}")
