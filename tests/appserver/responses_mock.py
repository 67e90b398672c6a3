"""A loopback stand-in for the Responses API that makes the model call one MCP tool.

Run as a child process (standard library only)::

    python responses_mock.py --log FILE --namespace mcp__NAME --tool TOOL [--loopback-up]

It listens on 127.0.0.1 (a free port), prints ``{"port": N}`` on stdout, and serves until
its stdin closes. Each ``POST …/responses`` body is appended to ``--log`` as one JSON line.
A request whose input holds no ``function_call_output`` yet is answered with a streamed
``function_call`` of TOOL in NAMESPACE whose arguments are the text of the last user
message (so the test chooses them per turn); a request carrying the tool's output is
answered with an assistant message, which ends the turn. Anything else is a 404.
``--loopback-up`` first brings ``lo`` up (a fresh network namespace has it down).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import socket
import struct
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1


def bring_loopback_up() -> None:
    """Set IFF_UP on ``lo`` (what ``ip link set lo up`` does), with two ioctls."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(sock, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | IFF_UP))


def sse(events: list[dict[str, Any]]) -> bytes:
    """Server-sent events, one per event, named by its ``type``."""
    return b"".join(
        f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode() for event in events
    )


def last_user_text(body: dict[str, Any]) -> str:
    """The text of the last user message in the request's input."""
    texts = [
        part["text"]
        for item in body.get("input", [])
        if item.get("type") == "message" and item.get("role") == "user"
        for part in item.get("content", [])
        if part.get("type") == "input_text"
    ]
    return texts[-1] if texts else ""


def reply(body: dict[str, Any], namespace: str, tool: str, number: int) -> list[dict[str, Any]]:
    """The events answering request ``number``: the tool call, or, after it, the last word."""
    response_id = f"resp_{number}"
    outputs = [item for item in body.get("input", []) if item.get("type") == "function_call_output"]
    if outputs:
        item: dict[str, Any] = {
            "type": "message",
            "role": "assistant",
            "id": f"msg_{number}",
            "content": [{"type": "output_text", "text": "done"}],
        }
    else:
        item = {
            "type": "function_call",
            "id": f"fc_{number}",
            "call_id": f"call_{number}",
            "name": tool,
            "namespace": namespace,
            "arguments": last_user_text(body),
        }
    usage = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    return [
        {"type": "response.created", "response": {"id": response_id}},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": {"id": response_id, "usage": usage}},
    ]


def serve(log: Path, namespace: str, tool: str) -> ThreadingHTTPServer:
    """A server answering on 127.0.0.1, already listening, not yet serving."""
    lock = threading.Lock()
    count = [0]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            if not self.path.endswith("/responses"):
                self._send(404, b"", "text/plain")
                return
            body = json.loads(raw)
            with lock:
                count[0] += 1
                number = count[0]
                with log.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(body) + "\n")
            self._send(200, sse(reply(body, namespace, tool, number)), "text/event-stream")

        def do_GET(self) -> None:
            self._send(404, b"", "text/plain")

        def _send(self, status: int, payload: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the log file is the record."""

    return ThreadingHTTPServer(("127.0.0.1", 0), Handler)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--tool", required=True)
    parser.add_argument("--loopback-up", action="store_true")
    args = parser.parse_args()
    if args.loopback_up:
        bring_loopback_up()
    server = serve(args.log, args.namespace, args.tool)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    print(json.dumps({"port": server.server_address[1]}), flush=True)
    sys.stdin.read()  # until the test closes our stdin (or dies)
    server.shutdown()
    server.server_close()


if __name__ == "__main__":
    main()
