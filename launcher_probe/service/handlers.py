"""The helper's operations: ``resolve``, ``meta``, ``status``, ``forget``.

``answer_now`` runs on the event loop and answers what needs no resolution (a warm
decision, status, forget); it returns None for the rest, which ``answer_later`` answers
in a worker thread, or, for a ``resolve`` whose resolution is already under way,
``answer_waited`` once it is done (``pending``: no thread waits for it). All return one
response line and never raise.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from launcher_probe import __version__
from launcher_probe.errors import InputRejected, LauncherProbeError
from launcher_probe.host.decision import Decision
from launcher_probe.service.decisions import DecisionTable, Held
from launcher_probe.service.protocol import (
    VERSION,
    ErrorReason,
    ProtocolError,
    Request,
    error_line,
    result_line,
    result_line_from_text,
)

log = logging.getLogger("launcher_probe.service")


class _NotWarm(Exception):
    """The decision must be made first (in a worker thread)."""


class Handlers:
    """Answers requests from a DecisionTable."""

    def __init__(self, table: DecisionTable, *, socket: str, activated: bool) -> None:
        self.table = table
        self.socket = socket
        self.activated = activated
        self.started = time.monotonic()

    def answer_now(self, request: Request) -> bytes | None:
        """The response line when it needs no resolution, else None."""
        self.table.counters["requests"] += 1
        op, args = request.op, request.args
        if op == "status":
            return result_line(self.status(), request.id)
        if op == "forget":
            return result_line({"forgotten": self.table.forget(args.get("codex"))}, request.id)
        if op == "resolve":
            held = None if args.get("refresh") else self.table.warm(args.get("codex"))
            return None if held is None else result_line_from_text(held.warm_answer, request.id)
        try:
            return self._guarded(request, lambda: self._meta(request, self._warm))
        except _NotWarm:
            return None

    def pending(self, request: Request) -> Future[Held] | None:
        """The resolution under way that answers ``request`` (a ``resolve`` without
        ``refresh``), if any."""
        if request.op != "resolve" or request.args.get("refresh"):
            return None
        return self.table.running(request.args.get("codex"))

    def answer_waited(self, request: Request, done: Future[Held]) -> bytes | None:
        """The response line to ``request`` from the finished resolution ``done`` (a warm
        hit: another request's resolution made it); None when what it rests on changed
        since (its replay, at most ``REPLAY_INTERVAL`` old, fails), or when it timed out
        under a shorter deadline than this request's: ``answer_later`` then."""

        def answer() -> bytes:
            held = done.result()
            if not held.answers(request.args.get("timeout")):
                raise _NotWarm  # its shorter deadline passed: this request's own resolves
            if not self.table.replayed(request.args.get("codex"), held):
                raise _NotWarm
            return result_line_from_text(held.warm_answer, request.id)

        try:
            return self._guarded(request, answer)
        except _NotWarm:
            return None

    def answer_later(self, request: Request) -> bytes:
        """The response line, resolving first (slow: a probe may run)."""
        args = request.args
        if request.op == "resolve":
            codex, refresh, timeout = args.get("codex"), args.get("refresh"), args.get("timeout")
            return self._guarded(
                request,
                lambda: result_line_from_text(
                    self.table.resolve_answer(codex, refresh=bool(refresh), timeout=timeout)[1],
                    request.id,
                ),
            )
        return self._guarded(
            request,
            lambda: self._meta(request, lambda codex: self.table.resolve(codex).decision),
        )

    def status(self) -> dict[str, Any]:
        """``status``'s result."""
        return {
            "version": __version__,
            "protocol": VERSION,
            "pid": os.getpid(),
            "uptime": round(time.monotonic() - self.started, 3),
            "socket": self.socket,
            "activated": self.activated,
            "decisions": self.table.status(),
            "counters": dict(self.table.counters),
        }

    def _warm(self, codex: str | None) -> Decision:
        held = self.table.warm(codex)
        if held is None:
            raise _NotWarm
        return held.decision

    def _guarded(self, request: Request, answer: Callable[[], bytes]) -> bytes:
        """``answer()``, or the error line for what it raised (except _NotWarm)."""
        try:
            return answer()
        except _NotWarm:
            raise
        except ProtocolError as error:
            return error_line(error.reason, error.detail, request.id)
        except InputRejected as error:
            return error_line(ErrorReason.INPUT_REJECTED, str(error), request.id)
        except LauncherProbeError as error:
            return error_line(ErrorReason.INTERNAL_ERROR, str(error), request.id)
        except Exception as error:
            log.exception("internal error answering %s", request.op)
            return error_line(ErrorReason.INTERNAL_ERROR, repr(error), request.id)

    def _meta(self, request: Request, decide: Callable[[str | None], Decision]) -> bytes:
        from launcher_probe.host.inject import (
            BindingWithToolCall,
            Method,
            ServerDescription,
            Transport,
            dumps_meta,
            request_meta,
        )
        from launcher_probe.state import SandboxState

        args = request.args
        server_args = args["server"]
        try:
            transport = Transport(server_args["transport"])
            method = Method(args.get("method") or Method.TOOLS_CALL)
        except ValueError as error:
            raise ProtocolError(ErrorReason.INVALID_ARGUMENT, str(error)) from error
        server = ServerDescription(
            server_args.get("name", ""), transport, server_args.get("capabilities")
        )
        state = args.get("state")
        if isinstance(state, str) and ("\n" in state or "\r" in state):
            # The response is one line: a state text spanning lines is sent compact.
            state = SandboxState.from_value(SandboxState.from_text(state).value)
        try:
            result = request_meta(
                method,
                server,
                sandbox_state=state,
                launcher=lambda: decide(args.get("codex")),
                caller_meta=args.get("caller_meta"),
                thread_id=args.get("thread_id"),
                origin_call_id=args.get("origin_call_id"),
                host_meta=args.get("host_meta"),
                progress_token=args.get("progress_token"),
            )
        except BindingWithToolCall as error:
            detail = "thread_id and origin_call_id go with method resources/read"
            raise ProtocolError(ErrorReason.INVALID_ARGUMENT, detail) from error
        return result_line_from_text(dumps_meta(result, explain=True).encode(), request.id)
