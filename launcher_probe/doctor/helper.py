"""The ``serve`` helper: is one running for this user, on which socket, for how long, and
does it give the decision this process would make (a helper started by a service manager
does not see the shell's environment)."""

from __future__ import annotations

from typing import Any

TYPE_CHECKING = False
if TYPE_CHECKING:
    from launcher_probe.host.decision import Decision

#: How long doctor waits for a helper's ``status`` answer (a live one answers at once).
STATUS_WAIT = 1.0
#: What doctor compares of two decisions.
_GIST = ("decision", "launcher", "reason")


def collect(codex: str | None = None, local: Decision | None = None) -> dict[str, Any]:
    """``{"running", "socket", "pid", "version", "uptime", "detail", "decision", "agrees",
    "problem", "fix"}``; ``detail`` says why no helper answered (none is needed: every
    command works without one). With ``local`` (this process's decision for ``codex``), a
    running helper is asked the ``resolve`` a client would send: ``decision`` is the gist of
    its answer (``decision``, ``launcher``, ``reason``), ``agrees`` whether it is the same,
    and ``problem``/``fix`` say what to do when it is not."""
    from launcher_probe.client import HelperUnavailable, request
    from launcher_probe.json_output import printable
    from launcher_probe.service.location import UnsafeRuntimeDir, default_socket

    part: dict[str, Any] = {
        "running": False,
        "socket": None,
        "pid": None,
        "version": None,
        "uptime": None,
        "detail": "",
        "decision": None,
        "agrees": None,
        "problem": None,
        "fix": [],
    }
    try:
        socket = default_socket()
    except UnsafeRuntimeDir as error:
        return {**part, "detail": f"not asking the helper: {error}"}
    part["socket"] = printable(socket)
    try:
        status = request("status", wait=STATUS_WAIT, socket_path=socket)
    except HelperUnavailable as error:
        return {**part, "detail": str(error)}
    pid, version, uptime = status.get("pid"), status.get("version"), status.get("uptime")
    part.update(  # what a helper says about itself is shown only when it has the right type
        running=True,
        pid=pid if type(pid) is int else None,
        version=version if isinstance(version, str) else None,
        uptime=uptime if type(uptime) in (int, float) else None,
    )
    if local is not None:
        part.update(_compare(codex, local))
    return part


def _gist(decision: Decision) -> dict[str, Any]:
    shown = decision.to_json()
    return {key: shown.get(key) for key in _GIST}


def _compare(codex: str | None, local: Decision) -> dict[str, Any]:
    """The helper's answer to the client's ``resolve`` next to ``local``."""
    from launcher_probe.client import HelperUnavailable, resolve_with_origin

    try:
        theirs = resolve_with_origin("helper", codex)[0]
    except HelperUnavailable as error:
        return {
            "agrees": False,
            "problem": f"the helper's answer to resolve is unusable: {error}",
            "fix": _fixes(),
        }
    gist = _gist(theirs)
    if gist == _gist(local):
        return {"decision": gist, "agrees": True}
    said = (
        f"publishes {gist['launcher']['codexExecutable']}"
        if gist["decision"] == "published"
        else f"withholds ({gist['reason']})"
    )
    return {
        "decision": gist,
        "agrees": False,
        "problem": f"the helper {said}, not what this process decides (above): "
        "clients using it get the helper's decision",
        "fix": _fixes(),
    }


def _fixes() -> list[str]:
    return [
        "give the helper the same setting: set LAUNCHER_PROBE_CODEX in this shell, or codex "
        "in the config file (clients send it with each request), or the commented "
        "Environment= line of `launcher-probe serve --print-unit systemd` "
        "(EnvironmentVariables for launchd), then restart the helper",
        "or ask in process: --via local",
    ]
