"""A stdio MCP server with one tool, ``run``, that runs a command inside the Codex sandbox.

Codex passes the sandbox state and the launcher in each ``tools/call``'s ``_meta``; the
server runs ``<codexExecutable> sandbox --sandbox-state-json <state> -- <command>``.
Without a usable launcher or state the tool fails closed: it reports why and runs
nothing. ``--allow-unsandboxed`` is the operator's explicit opt-out.

Run it as ``python -m launcher_probe.examples.shell_server``; register it with Codex
(``~/.codex/config.toml``), with the Python that has launcher-probe and its ``mcp`` extra
installed (``scripts/run`` makes one: ``.venv/bin/python``)::

    [mcp_servers.shell]
    command = "/path/to/venv/bin/python"
    args = ["-m", "launcher_probe.examples.shell_server"]

Needs the ``mcp`` extra (the official MCP Python SDK, 2.3).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import tempfile
from typing import BinaryIO, TypedDict

# First: without the mcp extra, its ImportError says what to install.
from launcher_probe.server.mcp import codex_sandbox_middleware, sandbox_request  # isort: skip
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError

from launcher_probe.errors import InputRejected
from launcher_probe.server.prepared import PreparedCommand
from launcher_probe.server.request import SandboxRequest

__all__ = ["OUTPUT_LIMIT", "RunOutcome", "build_server", "main"]

#: Bytes of stdout, and of stderr, returned to the client; the rest is dropped, and a
#: last line says how much there was.
OUTPUT_LIMIT = 1 << 20


class RunOutcome(TypedDict):
    """What ``run`` returns: the command's status and output, what confined it (see
    ``_enforced``), and the argv actually run."""

    exit_status: int
    stdout: str
    stderr: str
    sandbox: str
    argv: list[str]


def _enforced(request: SandboxRequest, command: list[str], argv: list[str]) -> str:
    """What confined the command: ``"none"`` when it ran as given (the operator's opt-out),
    else the type of the permission profile ``codex sandbox`` applied, as the state names
    it: ``"managed"`` (restricted as the profile says) or ``"disabled"`` (no restriction)."""
    if argv == command or request.state is None:
        return "none"
    profile = request.state.value.get("permissionProfile")
    kind = profile.get("type") if isinstance(profile, dict) else None
    return kind if isinstance(kind, str) else "unknown"


def _execute(prepared: PreparedCommand, timeout: float) -> tuple[int, str, str]:
    """Run the command in a process group of its own (on Linux the launcher through the
    descriptor that was verified): its status and the head of its output.

    Output goes to unlinked temporary files, so a chatty command cannot fill the server's
    memory; on timeout the whole group is killed, not just the direct child.
    """
    with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        process = prepared.popen(
            stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, start_new_session=True
        )
        try:
            status = process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)  # not yet reaped: the group id is still ours
            process.wait()
            raise ToolError(f"the command did not finish within {timeout:g} s") from None
        return status, _head(stdout), _head(stderr)


def _head(stream: BinaryIO) -> str:
    """The first ``OUTPUT_LIMIT`` bytes of ``stream``; when there were more, a last line
    says so (``[output cut: 1048576 of N bytes shown]``)."""
    total = stream.seek(0, os.SEEK_END)
    stream.seek(0)
    head = stream.read(OUTPUT_LIMIT).decode("utf-8", "replace")
    if total > OUTPUT_LIMIT:
        head += f"\n[output cut: {OUTPUT_LIMIT} of {total} bytes shown]"
    return head


def build_server(*, allow_unsandboxed: bool = False, timeout: float = 60.0) -> MCPServer:
    """The server; both settings are the operator's, never the caller's."""
    server = MCPServer("sandboxed-shell", middleware=[codex_sandbox_middleware])

    @server.tool()
    def run(command: list[str], ctx: Context) -> RunOutcome:
        """Run a command (program, then its arguments; no shell) inside the Codex sandbox."""
        try:
            request = sandbox_request(ctx, allow_unsandboxed=allow_unsandboxed)
            prepared = request.prepare(command)
        except InputRejected as error:
            raise ToolError(str(error)) from error
        argv = prepared.argv
        try:
            with prepared:
                status, stdout, stderr = _execute(prepared, timeout)
        except OSError as error:
            raise ToolError(f"cannot run {argv[0]!r}: {error.strerror}") from error
        return RunOutcome(
            exit_status=status,
            stdout=stdout,
            stderr=stderr,
            sandbox=_enforced(request, command, argv),
            argv=argv,
        )

    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--allow-unsandboxed",
        action="store_true",
        help="run commands WITHOUT the sandbox when the launcher or state is missing (logged)",
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per command")
    args = parser.parse_args()
    build_server(allow_unsandboxed=args.allow_unsandboxed, timeout=args.timeout).run()


if __name__ == "__main__":
    main()
