"""In-process rows: P1, a memory hit of ``resolve_launcher``, and the injector per call,
each against the ``lstat``s it must do (one per component of the binary's walk)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from benchmarks.core import Env, Row, batched, interleaved_medians

#: A tools/call request Codex CLI 0.169.0 sent: its state, caller keys and host keys.
CAPTURED = Path(__file__).resolve().parent.parent / "tests/data/codex-0.169.0-tools-call.json"
#: Calls per sample: enough that one sample is far above the clock's resolution.
CALLS = 200


def _lstats(codex: str) -> tuple[list[str], int]:
    """The paths a warm check must ``lstat`` (every component of the walk), and how many."""
    from launcher_probe.host.paths.fingerprint import Fingerprint

    paths = [component.path for component in Fingerprint.of(codex, codex).components]
    return paths, len(paths)


def _captured_meta() -> tuple[str, dict[str, Any], dict[str, Any]]:
    """The captured request's state (as JSON text), caller keys and host keys."""
    from launcher_probe.contract import HOST_OWNED_KEYS, SANDBOX_KEYS
    from launcher_probe.host.meta_input import PROGRESS_TOKEN_KEY

    meta = json.loads(CAPTURED.read_text())["params"]["_meta"]
    state = json.dumps(meta["codex/sandbox-state"], separators=(",", ":"))
    host = {key: meta[key] for key in ("threadId", "x-codex-turn-metadata")}
    injected = {*HOST_OWNED_KEYS, *SANDBOX_KEYS, PROGRESS_TOKEN_KEY}
    caller = {key: value for key, value in meta.items() if key not in injected}
    return state, caller, host


def rows(env: Env, runs: int) -> list[Row]:
    """P1 and the injector, sampled side by side with the bare ``lstat``s."""
    from launcher_probe.host.decision import Published
    from launcher_probe.host.inject import HostMeta, ServerDescription, Transport, tool_call_meta
    from launcher_probe.host.resolver import resolve_launcher
    from launcher_probe.json_input import checked_value
    from launcher_probe.state import SandboxState

    codex = env.codex
    decision = resolve_launcher(codex=codex)
    if not isinstance(decision, Published):
        raise SystemExit(f"{codex} was not published: {decision.reason}: {decision.detail}")
    paths, count = _lstats(codex)

    def lstats() -> None:
        for path in paths:
            os.lstat(path)

    def hit() -> None:
        again = resolve_launcher(codex=codex)
        if not isinstance(again, Published) or not again.from_cache:
            raise SystemExit(f"a warm resolve_launcher did not answer from memory: {again}")

    text, caller, host = _captured_meta()
    state = SandboxState.from_text(text)  # once per turn, as a host holds it
    turn = HostMeta(host)  # the host's keys of the turn: checked once, too
    server = ServerDescription("files", Transport.STDIO, {"codex/sandbox-state": {}})

    def inject() -> None:
        result = tool_call_meta(
            server,
            sandbox_state=state,
            launcher=decision,
            caller_meta=caller,
            host_meta=turn,
            progress_token=1,
        )
        if not result.launcher_included:
            raise SystemExit(f"the injector left the launcher out: {result.detail}")

    def least() -> None:  # what the injector cannot skip: the replay, the caller's check
        decision.fingerprint.first_change()
        checked_value(caller, "caller metadata")

    actions = [lstats, hit, decision.fingerprint.first_change, inject, least]
    base, memory, replay, injector, floor = (
        median / CALLS
        for median in interleaved_medians([batched(action, CALLS) for action in actions], runs)
    )
    yardstick = f"{count} lstat()s"
    return [
        Row("P1 in-process memory hit", memory, yardstick, base, 1.5, note="resolve_launcher"),
        Row(
            "  floor: the fingerprint replay",
            replay,
            yardstick,
            base,
            None,
            note="first_change(): what a hit cannot skip",
        ),
        Row(
            "injector per call",
            injector,
            yardstick,
            base,
            2.0,
            note="tool_call_meta, captured Codex request, HostMeta per turn",
        ),
        Row(
            "  floor: replay + JSON checks",
            floor,
            yardstick,
            base,
            None,
            note="first_change(), checked_value() of the caller's keys",
        ),
    ]
