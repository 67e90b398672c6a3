"""The helper's client: ask a running ``launcher-probe serve``, or do the work in process.

``resolve_via("auto", ...)`` asks the helper when its socket answers and falls back to
``resolve_launcher`` when there is none, it refuses, or it dies before answering.
Uses the ``_socket`` core (``socket``'s enums would cost a warm CLI resolve more than the
round trip) and imports the decision types only once there is an answer.
"""

from __future__ import annotations

import _socket
import json
import os
import time

from launcher_probe.errors import ExitCode, InputRejected, LauncherProbeError, UsageError
from launcher_probe.host.cache.policy import DEFAULT_LOCK_TIMEOUT
from launcher_probe.host.probe_result import DEFAULT_TIMEOUT

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from launcher_probe.host.decision import Decision
    from launcher_probe.host.paths.fingerprint import Fingerprint

__all__ = [
    "CONNECT_TIMEOUT",
    "LOCK_WAIT",
    "MAX_ANSWER_BYTES",
    "PROBE_TIMEOUT",
    "VIA",
    "HelperError",
    "HelperUnavailable",
    "decision_from_json",
    "request",
    "resolve_via",
]

#: How the CLI gets a decision: the helper if it answers, only the helper, or in process.
VIA = ("auto", "helper", "local")
#: Connecting to a helper that exists takes microseconds; this bounds a wedged one.
CONNECT_TIMEOUT = 0.5
#: A helper may wait this long for another process probing the same binary (the
#: resolver's lock wait), on top of the probe deadline.
LOCK_WAIT = DEFAULT_LOCK_TIMEOUT
#: The probe deadline the helper applies when the request names none.
PROBE_TIMEOUT = DEFAULT_TIMEOUT
#: The longest answer line read.
MAX_ANSWER_BYTES = 16 << 20


class HelperUnavailable(LauncherProbeError):
    """No helper answered (none running, refused, died mid-request, unreadable answer)."""

    exit_code = ExitCode.WITHHELD
    reason = "helper_unavailable"


class HelperError(HelperUnavailable):
    """The helper answered with an error object: ``reason`` and ``detail``."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"the helper refused the request: {reason}: {detail}")
        self.reason = reason
        self.detail = detail


def request(
    op: str,
    fields: dict[str, Any] | None = None,
    *,
    wait: float,
    socket_path: str | None = None,
) -> dict[str, Any]:
    """Send ``{"v": 1, "op": op, **fields}`` to the helper and return its ``result``.

    ``wait`` bounds the whole exchange, in seconds; ``socket_path`` defaults to
    ``$LAUNCHER_PROBE_SOCKET`` or the user runtime dir's. HelperUnavailable when no helper
    of this user answers; HelperError when it answers with an error; InputRejected when
    ``fields`` are not JSON.
    """
    from launcher_probe.service.location import default_socket
    from launcher_probe.service.peer import peer_uid

    path = socket_path or default_socket()
    try:
        line = json.dumps({"v": 1, "op": op, **(fields or {})}, ensure_ascii=False).encode()
    except (TypeError, ValueError) as error:
        raise InputRejected(f"the request cannot be sent as JSON: {error}") from error
    deadline = time.monotonic() + wait
    connection = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        connection.settimeout(min(CONNECT_TIMEOUT, wait))
        connection.connect(path)
        if peer_uid(connection) != os.geteuid():
            raise HelperUnavailable(f"{path} is served by another user; not asking it")
        connection.settimeout(max(deadline - time.monotonic(), 0.001))
        connection.sendall(line + b"\n")
        answer = _read_line(connection, deadline)
    except OSError as error:
        raise HelperUnavailable(f"no helper answered on {path}: {error}") from error
    finally:
        connection.close()
    return _result(answer, path)


def _read_line(connection: _socket.socket, deadline: float) -> bytes:
    data = bytearray()
    while b"\n" not in data:
        connection.settimeout(max(deadline - time.monotonic(), 0.001))
        chunk = connection.recv(65536)
        if not chunk:
            raise OSError("the connection closed before the answer")
        data += chunk
        if len(data) > MAX_ANSWER_BYTES:
            raise OSError("the answer is too long")
    return bytes(data[: data.index(b"\n")])


def _result(answer: bytes, path: str) -> dict[str, Any]:
    try:
        response = json.loads(answer)
        if response["ok"] is True and isinstance(response["result"], dict):
            result: dict[str, Any] = response["result"]
            return result
        error = response["error"]
        reason, detail = str(error["reason"]), str(error["detail"])
    except (ValueError, KeyError, TypeError) as error:
        raise HelperUnavailable(f"unreadable answer from {path}: {error!r}") from error
    raise HelperError(reason, detail)


def decision_from_json(value: dict[str, Any]) -> Decision:
    """The Decision a ``resolve`` result (``Decision.to_json()``) describes; ValueError,
    KeyError or TypeError when it is not one.

    A published launcher is walked again here: its fingerprint is this process's own walk
    of the path as found and of the native binary, which must show the same files as the
    result's hops and pass the path rules (OSError when it cannot be walked), and this
    user's verdict cache must hold a fresh passed verdict for exactly that walk: a helper
    is trusted to have probed, never to say what passed.
    """
    from launcher_probe.contract import LauncherDescriptor, Reason
    from launcher_probe.host.decision import PassedOver, Published, Withheld
    from launcher_probe.host.paths.fingerprint import Fingerprint

    warnings = tuple(str(warning) for warning in value["warnings"])
    tried = tuple(
        PassedOver(
            str(item["source"]),
            str(item["path"]),
            None if item["resolved"] is None else str(item["resolved"]),
            Reason(item["reason"]),
            str(item["detail"]),
        )
        for item in value["tried"]
    )
    if value["decision"] == "published":
        descriptor = LauncherDescriptor.from_json(value["launcher"])
        hops = value["fingerprint"]
        fingerprint = Fingerprint.of(str(hops[0]["path"]), descriptor.codex_executable)
        if fingerprint.to_json() != hops or not fingerprint.verdict().ok:
            raise ValueError("the launcher on disk is not the one the helper verified")
        _require_passed_verdict(fingerprint)
        return Published(
            descriptor=descriptor,
            source=str(value["source"]),
            version=str(value["version"]),
            fingerprint=fingerprint,
            from_cache=bool(value["from_cache"]),
            probed_at=float(value["probed_at"]),
            warnings=warnings,
            tried=tried,
        )
    if value["decision"] != "withheld":
        raise ValueError(f"unknown decision {value['decision']!r}")
    searched = tuple(
        {"source": str(place["source"]), "path": str(place["path"])} for place in value["searched"]
    )
    return Withheld(Reason(value["reason"]), str(value["detail"]), tried, warnings, searched)


def _require_passed_verdict(fingerprint: Fingerprint) -> None:
    """ValueError unless the verdict cache holds a fresh passed verdict for ``fingerprint``."""
    from launcher_probe.host.cache.policy import CacheUnavailable, VerdictCache

    try:
        record = VerdictCache().lookup(fingerprint, warnings=[])
    except CacheUnavailable as error:
        raise ValueError(str(error)) from error
    if record is None or not record.result.ok:
        raise ValueError("no passed verdict for this launcher in this user's verdict cache")


def resolve_via(
    via: str,
    codex: str | None = None,
    *,
    refresh: bool = False,
    use_cache: bool = True,
    timeout: float | None = None,
    lock_timeout: float | None = None,
) -> tuple[Decision, str]:
    """The decision for ``codex`` and who made it (``"helper"`` or ``"local"``).

    ``via``: ``"auto"`` (the helper when it answers, else in process), ``"helper"`` (only
    the helper: HelperUnavailable otherwise), ``"local"``. The other arguments are
    ``resolve_launcher``'s (``None``: its defaults); ``use_cache=False`` and
    ``lock_timeout`` apply in process only (``use_cache=False`` with ``"helper"`` is a
    UsageError). Only the local path imports the resolver.
    """
    if via not in VIA:
        raise UsageError(f"--via must be one of {', '.join(VIA)}")
    if via == "helper" and not use_cache:
        raise UsageError("--no-cache cannot go through the helper (it keeps verdicts)")
    if via != "local" and use_cache:
        try:
            return _from_helper(codex, refresh, timeout), "helper"
        except (HelperUnavailable, InputRejected):  # no helper, or a path JSON cannot carry
            if via == "helper":
                raise
    from launcher_probe.host.resolver import ResolverConfig, resolve_launcher

    decision = resolve_launcher(
        codex,
        refresh=refresh,
        use_cache=use_cache,
        timeout=DEFAULT_TIMEOUT if timeout is None else timeout,
        config=ResolverConfig(
            lock_timeout=DEFAULT_LOCK_TIMEOUT if lock_timeout is None else lock_timeout
        ),
    )
    return decision, "local"


def _from_helper(codex: str | None, refresh: bool, timeout: float | None) -> Decision:
    fields: dict[str, Any] = {"codex": codex, "refresh": refresh}
    if timeout is not None:
        fields["timeout"] = timeout
    # The helper may have to probe, and wait for another prober first: allow for both.
    result = request("resolve", fields, wait=(timeout or PROBE_TIMEOUT) + LOCK_WAIT)
    try:
        decision = decision_from_json(result)
    except (ValueError, KeyError, TypeError, IndexError, OSError) as error:
        raise HelperUnavailable(f"the helper's decision is unusable: {error!r}") from error
    return decision
