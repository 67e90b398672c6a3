"""The helper's client: ask a running ``launcher-probe serve``, or do the work in process.

``resolve_via("auto", ...)`` answers from this user's own verdict record when the operator
named a path (``--codex``, ``$LAUNCHER_PROBE_CODEX``, the config file), or with none the
discovery memo, gives a fresh passed verdict; else it asks the helper when its socket
answers, sending that operator path as the request's ``codex`` (the client's setting wins
over the helper's environment), and falls back to the memo's ``not_found`` or else
``resolve_launcher`` when there is no helper, it refuses, it dies before answering, or its
answer is unusable (malformed, or for another path than the one asked).
Uses the ``_socket`` core (``socket``'s enums would cost a warm CLI resolve more than the
round trip) and imports the decision types only once there is an answer.
"""

from __future__ import annotations

import os
import time

from launcher_probe.errors import ExitCode, InputRejected, LauncherProbeError, UsageError
from launcher_probe.host.cache.policy import DEFAULT_LOCK_TIMEOUT
from launcher_probe.host.probe_result import DEFAULT_TIMEOUT
from launcher_probe.json_core import dumps

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from _socket import socket
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
#: The deepest answer parsed: a ``_meta`` (64 levels) inside the envelope.
MAX_ANSWER_DEPTH = 72
#: The longest socket path every system takes (macOS's ``sun_path`` holds 104 bytes).
_SUN_PATH_FITS = 104


class Origin:
    """Who made a decision: ``via`` is ``"helper"`` or ``"local"``; ``pid`` the helper's
    process (from the socket's peer credentials; None where the system does not say)."""

    __slots__ = ("pid", "via")

    def __init__(self, via: str, pid: int | None = None) -> None:
        self.via = via
        self.pid = pid

    def describe(self) -> str:
        """``decided by the helper, pid N`` (or ``decided in this process``)."""
        if self.via != "helper":
            return "decided in this process"
        return "decided by the helper" + ("" if self.pid is None else f", pid {self.pid}")


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


class HelperNotAsked(HelperUnavailable):
    """The socket's directory is not safe to use (another user's): no helper was asked;
    the message is a warning worth showing."""


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
    of this user answers (HelperNotAsked when the runtime directory is another user's) or
    its answer is no strict JSON within bounds; HelperError when it answers with an error;
    InputRejected when ``fields`` are not JSON.
    """
    return exchange(op, fields, wait=wait, socket_path=socket_path)[0]


def exchange(
    op: str,
    fields: dict[str, Any] | None = None,
    *,
    wait: float,
    socket_path: str | None = None,
) -> tuple[dict[str, Any], int | None]:
    """:func:`request`, and the pid of the helper that answered (None where unknown)."""
    from launcher_probe.service.location import UnsafeRuntimeDir, default_socket

    try:
        path = socket_path or default_socket()
    except UnsafeRuntimeDir as error:
        raise HelperNotAsked(f"not asking the helper: {error}") from error
    try:
        line = dumps({"v": 1, "op": op, **(fields or {})}, ensure_ascii=False).encode()
    except (TypeError, ValueError) as error:
        raise InputRejected(f"the request cannot be sent as JSON: {error}") from error
    missing = _missing(path)
    if missing is not None:  # no helper runs: connect would say so; the sockets not imported
        raise HelperUnavailable(f"no helper answered on {path}: {missing}")
    import _socket  # socket's classes without its enums; a helper asked only

    from launcher_probe.service.peer import peer

    deadline = time.monotonic() + wait
    connection = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        connection.settimeout(min(CONNECT_TIMEOUT, wait))
        connection.connect(path)
        pid, uid = peer(connection)
        if uid != os.geteuid():
            raise HelperUnavailable(f"{path} is served by another user; not asking it")
        connection.settimeout(max(deadline - time.monotonic(), 0.001))
        connection.sendall(line + b"\n")
        answer = _read_line(connection, deadline)
    except OSError as error:
        raise HelperUnavailable(f"no helper answered on {path}: {error}") from error
    finally:
        connection.close()
    return _result(answer, path), pid


def _missing(path: str) -> str | None:
    """What connect would say (``[Errno 2] ...``) when nothing is at ``path``, a file system
    path short enough for any system's socket address; None otherwise (a longer one, an
    abstract name, a NUL: connect's to judge, in its own words)."""
    try:
        if path.startswith("\0") or len(os.fsencode(path)) >= _SUN_PATH_FITS:
            return None
        os.stat(path)
    except FileNotFoundError as error:
        return str(OSError(error.errno, error.strerror))
    except (OSError, ValueError):
        return None
    return None


def _read_line(connection: socket, deadline: float) -> bytes:
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
    """The ``result`` of an answer line, parsed strictly (``json_input``) within
    MAX_ANSWER_BYTES and MAX_ANSWER_DEPTH; HelperError for an error answer."""
    from launcher_probe.json_input import InvalidJSON, Limits, loads_strict

    limits = Limits(max_bytes=MAX_ANSWER_BYTES, max_depth=MAX_ANSWER_DEPTH)
    try:
        response = loads_strict(answer.decode("utf-8"), "the answer", limits)
        if response["ok"] is True and isinstance(response["result"], dict):
            result: dict[str, Any] = response["result"]
            return result
        error = response["error"]
        reason, detail = error["reason"], error["detail"]
        if response["ok"] is not False or not (isinstance(reason, str) and isinstance(detail, str)):
            raise TypeError("not an answer of protocol version 1")
    except (InvalidJSON, UnicodeDecodeError, KeyError, TypeError) as error:
        raise HelperUnavailable(f"unreadable answer from {path}: {error}") from error
    raise HelperError(reason, detail)


def decision_from_json(value: dict[str, Any], asked: str | None = None) -> Decision:
    """The Decision a ``resolve`` result (``Decision.to_json()``) describes; ValueError,
    KeyError or TypeError when it is not one.

    A published launcher is walked again here: its fingerprint is this process's own walk
    of the path as found and of the native binary, which must show the same files as the
    result's hops and pass the path rules (OSError when it cannot be walked), and this
    user's verdict cache must hold a fresh passed verdict for exactly that walk: a helper
    is trusted to have probed, never to say what passed. With ``asked`` (the operator's
    path the request named), the launcher must be for that path, reached from it by
    symlinks alone, as a record on disk must be to be published without discovery.
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
        found = hops[0]["path"]
        if asked is not None and (found != asked or value["path"] != asked):
            raise ValueError(f"the helper answered for {found!r}, not for the path asked about")
        fingerprint = Fingerprint.of(str(found), descriptor.codex_executable)
        if fingerprint.to_json() != hops or not fingerprint.verdict().ok:
            raise ValueError("the launcher on disk is not the one the helper verified")
        if asked is not None and fingerprint.end != fingerprint.native:
            raise ValueError("the launcher is not reached from the path asked by symlinks alone")
        version = _passed_version(fingerprint)  # the record's word, not the answer's
        probed_at = value["probed_at"]
        if not isinstance(probed_at, int | float) or isinstance(probed_at, bool):
            raise TypeError("probed_at must be a number")
        return Published(
            descriptor=descriptor,
            source=str(value["source"]),
            version=version,
            fingerprint=fingerprint,
            from_cache=bool(value["from_cache"]),
            probed_at=float(probed_at),
            warnings=warnings,
            tried=tried,
        )
    if value["decision"] != "withheld":
        raise ValueError(f"unknown decision {value['decision']!r}")
    searched = tuple(
        {"source": str(place["source"]), "path": str(place["path"])} for place in value["searched"]
    )
    return Withheld(Reason(value["reason"]), str(value["detail"]), tried, warnings, searched)


def _passed_version(fingerprint: Fingerprint) -> str:
    """The version the fresh passed verdict for ``fingerprint`` in this user's verdict cache
    found; ValueError when the cache holds none."""
    from launcher_probe.host.cache.policy import CacheUnavailable, VerdictCache

    try:
        record = VerdictCache().lookup(fingerprint, warnings=[])
    except CacheUnavailable as error:
        raise ValueError(str(error)) from error
    if record is None or not record.result.ok:
        raise ValueError("no passed verdict for this launcher in this user's verdict cache")
    return record.result.version or ""


def resolve_via(
    via: str,
    codex: str | None = None,
    *,
    refresh: bool = False,
    use_cache: bool = True,
    timeout: float | None = None,
    lock_timeout: float | None = None,
) -> tuple[Decision, str]:
    """The decision for ``codex`` and who made it (``"helper"`` or ``"local"``): see
    :func:`resolve_with_origin`."""
    decision, origin = resolve_with_origin(
        via, codex, refresh=refresh, use_cache=use_cache, timeout=timeout, lock_timeout=lock_timeout
    )
    return decision, origin.via


def resolve_with_origin(
    via: str,
    codex: str | None = None,
    *,
    refresh: bool = False,
    use_cache: bool = True,
    timeout: float | None = None,
    lock_timeout: float | None = None,
) -> tuple[Decision, Origin]:
    """The decision for ``codex`` and its Origin.

    ``via``: ``"auto"`` (this user's record for the operator's path, else the helper when it
    answers, else in process), ``"helper"`` (only the helper: HelperUnavailable otherwise),
    ``"local"``. The operator's path (``codex``, else ``$LAUNCHER_PROBE_CODEX``, else the
    config file's; ConfigError when that file is unusable) is what the helper is asked
    about, so its own environment never overrides the client's. The other arguments are
    ``resolve_launcher``'s (``None``: its defaults); ``use_cache=False`` and
    ``lock_timeout`` apply in process only (``use_cache=False`` with ``"helper"`` is a
    UsageError). Only the local path imports the resolver's slow part (discovery, probe).
    """
    if via not in VIA:
        raise UsageError(f"--via must be one of {', '.join(VIA)}")
    if via == "helper" and not use_cache:
        raise UsageError("--no-cache cannot go through the helper (it keeps verdicts)")
    warning = None
    if via != "local" and use_cache:
        from launcher_probe.host.decision import Published
        from launcher_probe.host.resolver import (
            decided_without_discovery,
            operator_choice,
            operator_path,
        )

        # This user's own record answers first (the flag's or the variable's path, else the
        # discovery memo); the config file is read only when neither decides (a memo's
        # not_found says it names no path). A not_found of this environment's is not the
        # helper's answer: it is asked still, and that not_found is the answer without it.
        operator = operator_path(codex)
        known = decided_without_discovery(operator) if via == "auto" and not refresh else None
        if known is None and operator is None:
            operator = operator_choice(None)
            if via == "auto" and operator is not None and not refresh:
                known = decided_without_discovery(operator)
        if isinstance(known, Published):
            return known, Origin("local")
        try:
            return _from_helper(operator, refresh, timeout)
        except HelperNotAsked as error:  # said, then resolved in process
            if via == "helper":
                raise
            warning = str(error)
        except (HelperUnavailable, InputRejected):  # no helper, or a path JSON cannot carry
            if via == "helper":
                raise
        if known is not None:  # the memo's not_found: what resolving would replay again
            return _warned(known, warning), Origin("local")
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
    return _warned(decision, warning), Origin("local")


def _warned(decision: Decision, warning: str | None) -> Decision:
    """``decision`` with ``warning`` (why the helper did not answer) first, if any."""
    return decision if warning is None else decision.replace(warnings=(warning, *decision.warnings))


def _from_helper(
    operator: tuple[str, str] | None, refresh: bool, timeout: float | None
) -> tuple[Decision, Origin]:
    asked = None if operator is None else operator[1]
    fields: dict[str, Any] = {"codex": asked, "refresh": refresh}
    if timeout is not None:
        fields["timeout"] = timeout
    # The helper may have to probe, and wait for another prober first: allow for both.
    result, pid = exchange("resolve", fields, wait=(timeout or PROBE_TIMEOUT) + LOCK_WAIT)
    try:
        decision = decision_from_json(result, asked)
    except (ValueError, KeyError, TypeError, IndexError, AttributeError, OSError) as error:
        raise HelperUnavailable(f"the helper's decision is unusable: {error!r}") from error
    except LauncherProbeError as error:  # a descriptor the contract refuses, say
        raise HelperUnavailable(f"the helper's decision is unusable: {error}") from error
    from launcher_probe.host.decision import Published

    if operator is not None and isinstance(decision, Published):
        decision = decision.replace(source=str(operator[0]))  # the client's source, not "explicit"
    return decision, Origin("helper", pid)
