"""Service-manager units for the helper: a systemd user service with its socket unit
(socket activation), and a launchd agent."""

from __future__ import annotations

import shlex
import sys
from xml.sax.saxutils import escape

LABEL = "launcher-probe"


def _command(socket: str | None) -> list[str]:
    command = [sys.executable, "-m", "launcher_probe", "serve"]
    return command if socket is None else [*command, "--socket", socket]


def systemd_units(socket: str | None) -> str:
    """``launcher-probe.socket`` and ``launcher-probe.service`` (systemd passes the socket
    it listens on; the service itself binds nothing)."""
    listen = socket or "%t/launcher-probe/launcher-probe.sock"
    start = " ".join(shlex.quote(word) for word in _command(None))
    return f"""\
# ~/.config/systemd/user/launcher-probe.socket
[Unit]
Description=launcher-probe host helper socket

[Socket]
ListenStream={listen}
SocketMode=0600
DirectoryMode=0700

[Install]
WantedBy=sockets.target

# ~/.config/systemd/user/launcher-probe.service
[Unit]
Description=launcher-probe host helper (verified Codex launcher for MCP hosts)
Requires=launcher-probe.socket
After=launcher-probe.socket

[Service]
Type=simple
ExecStart={start}
ExecReload=/bin/kill -HUP $MAINPID
Restart=on-failure

[Install]
WantedBy=default.target
"""


def launchd_agent(socket: str | None) -> str:
    """A launchd agent plist (``~/Library/LaunchAgents/launcher-probe.plist``) that keeps the
    helper running; it binds its socket itself."""
    arguments = "\n".join(f"    <string>{escape(word)}</string>" for word in _command(socket))
    return f"""\
<?xml version="1.0" encoding="UTF-8"?>
<!-- ~/Library/LaunchAgents/{LABEL}.plist -->
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key>
  <string>{LABEL}</string>
  <key>ProgramArguments</key>
  <array>
{arguments}
  </array>
  <key>RunAtLoad</key>
  <true/>
  <key>KeepAlive</key>
  <true/>
  <key>ProcessType</key>
  <string>Background</string>
</dict>
</plist>
"""


UNITS = {"systemd": systemd_units, "launchd": launchd_agent}
