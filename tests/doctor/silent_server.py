"""A stdio MCP server that answers ``initialize`` advertising no experimental capability,
then waits for stdin to close. Standard library only; a doctor test starts it."""

from __future__ import annotations

import json
import sys


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("method") == "initialize":
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "silent", "version": "1"},
            }
            answer = {"jsonrpc": "2.0", "id": message["id"], "result": result}
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
