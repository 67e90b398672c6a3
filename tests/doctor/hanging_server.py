"""A stdio MCP server that never answers ``initialize``: it starts a child in its own
process group, ignores SIGTERM and stdin closing, and sleeps. Only SIGKILL to its group
ends it and its child. Arguments are ignored (a test puts a marker there)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time


def main() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = [sys.executable, "-c", "import time; time.sleep(3600)", *sys.argv[1:]]
    subprocess.Popen(child, stdin=subprocess.DEVNULL)
    print("hanging-server: started; never answering initialize", file=sys.stderr, flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
