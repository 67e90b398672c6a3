"""Wires the helper together: the listener (bound or inherited), the decisions, the event
loop and the watcher; SIGHUP re-reads the config file in the background pool (a slow file
never stalls the loop)."""

from __future__ import annotations

import logging
import os

from launcher_probe.json_output import printable
from launcher_probe.service.activation import inherited_listener
from launcher_probe.service.decisions import DecisionTable
from launcher_probe.service.handlers import Handlers
from launcher_probe.service.listener import bind_listener
from launcher_probe.service.server import Limits, Server
from launcher_probe.service.watcher import Watcher

log = logging.getLogger("launcher_probe.service")


def serve(socket_path: str, limits: Limits) -> int:
    """Run the helper until SIGTERM/SIGINT; exit status 0. ServiceRefused when it cannot
    listen (an unsafe directory, another helper on the socket)."""
    listener = inherited_listener()
    lock = None
    if listener is None:
        listener, lock = bind_listener(socket_path)
        remove: str | None = socket_path
    else:
        socket_path, remove = str(listener.getsockname()), None
    table = DecisionTable()
    handlers = Handlers(table, socket=socket_path, activated=remove is None)
    server = Server(listener, handlers, remove=remove, limits=limits)
    watcher = Watcher(table, server.submit)

    def reread() -> None:
        from launcher_probe.errors import ConfigError
        from launcher_probe.host.discovery.config_file import config_file, configured_codex

        log.info("SIGHUP: re-reading %s", printable(str(config_file())))
        try:
            configured_codex()
        except ConfigError as error:
            log.error("%s (resolutions that read it are refused until it is fixed)", error)
        for key in table.drop_all():
            watcher.reverify(key, "the config file was re-read")

    server.on_reload = lambda: server.submit(reread)
    watcher.start()
    how = "an inherited socket" if remove is None else "its own socket"
    log.info("listening on %s (%s, pid %d)", printable(socket_path), how, os.getpid())
    try:
        return server.serve_forever()
    finally:
        watcher.stop()
        if lock is not None:
            os.close(lock)
