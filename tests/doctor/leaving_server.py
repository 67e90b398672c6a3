"""A stdio MCP server that leaves something behind or floods stderr, then answers
``initialize`` (its ``serverInfo.name`` says what its stderr is) and sleeps.

``leaving_server.py MODE MARKER``: ``pgrp`` starts a sleeper in a process group of its own,
``daemon`` one by the classic double fork (setsid, stdio closed), ``flood`` writes
``FLOOD_BYTES`` to stderr first. The sleepers carry ``MARKER`` in their argv."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time

FLOOD_BYTES = 64 << 20
SLEEPER = "import time; time.sleep(3600)"


def main() -> None:
    mode, marker = sys.argv[1:3]
    sleeper = [sys.executable, "-c", SLEEPER, marker]
    if mode == "pgrp":
        subprocess.Popen(sleeper, stdin=subprocess.DEVNULL, process_group=0)
    if mode == "daemon" and os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.closerange(0, 65536)
            os.execv(sys.executable, sleeper)
        os._exit(0)
    if mode == "flood":
        block = b"e" * (1 << 20)
        for _ in range(FLOOD_BYTES // len(block)):
            os.write(2, block)
        os.write(2, b"the end of the flood\n")
    kind = "pipe" if stat.S_ISFIFO(os.fstat(2).st_mode) else "file"
    request = json.loads(sys.stdin.readline())
    result = {
        "protocolVersion": "2025-06-18",
        "capabilities": {"experimental": {"codex/sandbox-state": {}}},
        "serverInfo": {"name": f"stderr-{kind}", "version": "1"},
    }
    print(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}), flush=True)
    time.sleep(3600)


if __name__ == "__main__":
    main()
