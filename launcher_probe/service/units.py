"""Service-manager units for the helper: a systemd user service with its socket unit
(socket activation), and a launchd agent.

A service manager does not pass the login shell's variables: each unit carries a commented
``LAUNCHER_PROBE_CODEX`` entry to fill in when the helper should decide with the operator's
path (clients send their own operator path anyway), and the launchd agent a log file (the
one place a helper says what it decided).
"""

from __future__ import annotations

import shlex
import sys
from xml.sax.saxutils import escape

LABEL = "launcher-probe"
#: Where the launchd agent's helper logs (launchd keeps no log of its own).
LAUNCHD_LOG = "~/Library/Logs/launcher-probe.log"


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
# The helper does not see your shell's variables. To make it decide with your operator
# path (clients send theirs, --codex or LAUNCHER_PROBE_CODEX, with every request anyway):
#Environment=LAUNCHER_PROBE_CODEX=/absolute/path/to/codex
Restart=on-failure

[Install]
WantedBy=default.target
"""


def launchd_agent(socket: str | None) -> str:
    """A launchd agent plist (``~/Library/LaunchAgents/launcher-probe.plist``) that keeps the
    helper running and logs to LAUNCHD_LOG; it binds its socket itself."""
    import os

    arguments = "\n".join(f"    <string>{escape(word)}</string>" for word in _command(socket))
    log = os.path.expanduser(LAUNCHD_LOG)  # launchd does not expand ~
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
  <key>StandardErrorPath</key>
  <string>{escape(log)}</string>
  <!-- The helper does not see your shell's variables. To make it decide with your operator
       path (clients send theirs, with every request, anyway), uncomment and fill in:
  <key>EnvironmentVariables</key>
  <dict>
    <key>LAUNCHER_PROBE_CODEX</key>
    <string>/absolute/path/to/codex</string>
  </dict>
  -->
</dict>
</plist>
"""


UNITS = {"systemd": systemd_units, "launchd": launchd_agent}
