"""Run an MCP server module unchanged, recording the raw bytes it reads and writes on stdio.

    python recording_server.py LOG_DIR SERVER_MODULE [ARGS...]

Before the server starts, stdin and stdout are put behind pipes: a thread copies each
byte from the real stdin to the server (and to ``LOG_DIR/<pid>.in``), another copies the
server's output to the real stdout (and to ``LOG_DIR/<pid>.out``), so the log holds the
JSON-RPC lines exactly as the host sent them. Then SERVER_MODULE runs in this process as
``__main__`` with ARGS (as ``python -m SERVER_MODULE ARGS`` would).
"""

from __future__ import annotations

import os
import runpy
import sys
import threading
from pathlib import Path


def _copy(source: int, target: int, log: Path) -> None:
    """Copy ``source`` to ``target`` and to ``log`` until end of file, then close both fds."""
    with log.open("wb", buffering=0) as record:
        while chunk := os.read(source, 1 << 16):
            record.write(chunk)
            view = memoryview(chunk)
            while view:
                view = view[os.write(target, view) :]
    os.close(source)
    os.close(target)


def _tee_stdin(log: Path) -> None:
    real, (read_end, write_end) = os.dup(0), os.pipe()
    os.dup2(read_end, 0)
    os.close(read_end)
    threading.Thread(target=_copy, args=(real, write_end, log), daemon=True).start()


def _tee_stdout(log: Path) -> threading.Thread:
    real, (read_end, write_end) = os.dup(1), os.pipe()
    os.dup2(write_end, 1)
    os.close(write_end)
    thread = threading.Thread(target=_copy, args=(read_end, real, log))
    thread.start()
    return thread


def main() -> None:
    log_dir, module, *args = sys.argv[1:]
    base = Path(log_dir) / str(os.getpid())
    _tee_stdin(base.with_suffix(".in"))
    copier = _tee_stdout(base.with_suffix(".out"))
    sys.argv = [module, *args]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    finally:
        sys.stdout.flush()
        os.close(1)  # the last write end: the copier sees end of file and finishes
        copier.join()


if __name__ == "__main__":
    main()
