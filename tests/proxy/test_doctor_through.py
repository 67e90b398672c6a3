"""``doctor`` recognises a server configured through ``proxy`` or ``wrap`` and explains it:
the policy, the inner command, and the launcher decision it starts under."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from launcher_probe.proxy.program import ASYNCIO_NOTE
from tests.conftest import HostEnv, run_cli
from tests.fakes import FakeCodex


def test_doctor_explains_proxied_and_wrapped_servers(
    host_env: HostEnv, fake_codex: FakeCodex, workspace: Path
) -> None:
    proxied = ["-m", "launcher_probe", "proxy", "--codex", str(fake_codex.path)]
    proxied += ["--sandbox", "workspace-write", "--cwd", str(workspace), "--network"]
    proxied += ["--", "python", "-m", "launcher_probe.examples.shell_server"]
    project = workspace.parent / "project"  # a server of its own, doctor run elsewhere
    project.mkdir()
    (project / "server.py").write_text("#!/usr/bin/env python3\n")
    (project / "server.py").chmod(0o755)
    (workspace.parent / "sub").mkdir()
    host_env.codex_home.mkdir(exist_ok=True)
    (host_env.codex_home / "config.toml").write_text(
        f"""
[mcp_servers.proxied]
command = {json.dumps(sys.executable)}
args = {json.dumps(proxied)}

[mcp_servers.trusted]
command = {json.dumps(sys.executable)}
args = {json.dumps([*proxied[:3], "--trust-host-state", *proxied[3:]])}

[mcp_servers.wrapped]
command = "/opt/bin/launcher-probe"
args = ["wrap", "-P", "build", "--", "my-server", "--stdio"]

[mcp_servers.wrapped-python]
command = "launcher-probe"
args = ["wrap", "--codex", {json.dumps(str(fake_codex.path))}, "--", "uvx", "mcp-server-fetch"]

[mcp_servers.wrapped-python-networked]
command = "launcher-probe"
args = ["wrap", "--codex", {json.dumps(str(fake_codex.path))}, "--network", "--", "uvx", "x"]

[mcp_servers.wrapped-python-withheld]
command = "launcher-probe"
args = ["wrap", "--", "uvx", "mcp-server-fetch"]

[mcp_servers.wrapped-unsandboxed]
command = "launcher-probe"
args = ["wrap", "--allow-unsandboxed", "--", "my-server"]

[mcp_servers.wrapped-in-its-cwd]
command = "launcher-probe"
args = ["wrap", "--codex", {json.dumps(str(fake_codex.path))}, "--", "./server.py"]
cwd = {json.dumps(str(project))}

[mcp_servers.wrapped-on-its-path]
command = "launcher-probe"
args = ["wrap", "--codex", {json.dumps(str(fake_codex.path))}, "--", "server.py"]
env = {{ PATH = {json.dumps(f"{project}:/usr/bin:/bin")} }}

[mcp_servers.refused]
command = "launcher-probe"
args = ["proxy", "--sandbox", "everything", "--", "my-server"]

[mcp_servers.two-policies]
command = "launcher-probe"
args = ["wrap", "-P", "build", "--sandbox", "read-only", "--", "my-server"]

[mcp_servers.help]
command = "launcher-probe"
args = ["proxy", "--help"]

[mcp_servers.state-only]
command = "launcher-probe"
args = ["wrap", "--print-state", "--", "my-server"]

[mcp_servers.root-of-read-only]
command = "launcher-probe"
args = ["proxy", "--writable-root", "/tmp", "--", "my-server"]

[mcp_servers.no-workspace]
command = "launcher-probe"
args = ["proxy", "--cwd", "/nonexistent/workspace", "--", "my-server"]

[mcp_servers.no-state-file]
command = "launcher-probe"
args = ["proxy", "--state", "@state.json", "--", "my-server"]
cwd = {json.dumps(str(project))}

[mcp_servers.relative-workspace]
command = "launcher-probe"
args = ["wrap", "--cwd", "sub", "--", "my-server"]
cwd = {json.dumps(str(workspace.parent))}

[mcp_servers.plain]
command = "my-server"
"""
    )
    done = run_cli("doctor", "--json", env=host_env.env)
    servers = {server["name"]: server for server in json.loads(done.stdout)["servers"]["servers"]}
    through = servers["proxied"]["through"]
    assert through["command"] == "proxy"
    assert through["policy"] == {
        "sandbox": "workspace-write",
        "cwd": str(workspace),
        "writable_roots": [],
        "network": "enabled",
    }
    assert through["inner"] == ["python", "-m", "launcher_probe.examples.shell_server"]
    assert through["launcher"]["decision"] == "published"
    assert through["launcher"]["launcher"] == {"codexExecutable": str(fake_codex.path)}
    # doctor itself finds no Codex here, but the proxy adds its own launcher, to Codex's
    # state when it trusts it; else it refuses Codex's calls, which carry their own state.
    assert json.loads(done.stdout)["launcher"]["decision"] == "withheld"
    assert (through["trust_host_state"], servers["trusted"]["through"]["trust_host_state"]) == (
        False,
        True,
    )
    assert servers["trusted"]["launcher"] == "sent"
    assert (servers["proxied"]["launcher"], servers["proxied"]["reason"]) == (
        "omitted",
        "host_state_refused",
    )
    assert "add --trust-host-state" in servers["proxied"]["fix"][0]
    wrapped = servers["wrapped"]["through"]
    assert wrapped["policy"] == {"permission_profile": "build"}
    assert wrapped["inner"] == ["my-server", "--stdio"]
    assert wrapped["launcher"]["reason"] == "not_found"
    assert wrapped["note"] is None  # a profile: its network is Codex's to say
    assert servers["wrapped-python"]["through"]["note"] == ASYNCIO_NOTE
    assert servers["wrapped-python-networked"]["through"]["note"] is None
    assert servers["wrapped-python-withheld"]["through"]["note"] is None  # wrap runs nothing
    # The launcher is not for a wrapped server: it runs in the sandbox as a whole (assumed
    # to take none, unchecked); under a withheld one, wrap starts nothing.
    assert [servers["wrapped-python"][key] for key in ("launcher", "reason", "fix")] == [
        "not_applicable",
        "wrapped",
        [],
    ]
    assert (
        "unless it advertises codex/sandbox-state (--check-servers asks it)"
        in (servers["wrapped-python"]["detail"])
    )
    withheld = servers["wrapped-python-withheld"]
    assert (withheld["launcher"], withheld["reason"]) == ("omitted", "not_found")
    assert withheld["detail"].startswith("wrap starts no server: ") and withheld["fix"]
    assert withheld["through"]["allow_unsandboxed"] is False
    unsandboxed = servers["wrapped-unsandboxed"]
    assert unsandboxed["through"]["allow_unsandboxed"] is True
    assert (unsandboxed["launcher"], unsandboxed["reason"]) == ("omitted", "not_found")
    assert unsandboxed["detail"].startswith("wrap runs the server UNSANDBOXED")
    assert through["allow_unsandboxed"] is None  # a proxy's
    # The command found as the server finds it: in its cwd, on its PATH (not doctor's).
    assert servers["wrapped-in-its-cwd"]["through"]["note"] == ASYNCIO_NOTE
    assert servers["wrapped-on-its-path"]["through"]["note"] == ASYNCIO_NOTE
    assert through["note"] is None  # proxy: the server runs outside the sandbox
    assert "invalid choice: 'everything'" in servers["refused"]["through"]["problem"]
    assert servers["two-policies"]["through"]["problem"] == (
        "--permission-profile takes the place of the policy options"
    )
    # What the command would refuse, or run no server for, is a problem too (doctor's own
    # output stays its report: the help is not printed).
    problems = {
        name: part["through"]["problem"] for name, part in servers.items() if part["through"]
    }
    assert problems["help"] == "--help prints its help and exits: no server runs"
    assert problems["state-only"] == "--print-state prints the state and exits: no server runs"
    assert problems["root-of-read-only"] == "--writable-root needs --sandbox workspace-write"
    assert problems["no-workspace"] == "--cwd is not a directory: '/nonexistent/workspace'"
    assert f"{project}/state.json" in problems["no-state-file"]  # from the server's cwd
    assert problems["relative-workspace"] is None  # its cwd's sub: the workspace
    assert servers["relative-workspace"]["through"]["policy"]["cwd"] == "sub"
    assert servers["plain"]["through"] is None

    text = run_cli("doctor", env=host_env.env).stdout
    assert (
        f"through launcher-probe proxy: workspace-write in {workspace}, network enabled "
        "(when the host sends no state); runs python -m launcher_probe.examples.shell_server"
    ) in text
    assert "network enabled (the only state: a call that sets its own is refused); runs" in text
    assert f"its launcher: published ({fake_codex.path})" in text
    assert "through launcher-probe wrap: Codex permissions profile build" in text
    assert text.count(f"note: {ASYNCIO_NOTE}") == 3


def test_doctor_checks_a_wrapped_server_by_whether_it_uses_the_launcher(
    host_env: HostEnv, fake_codex: FakeCodex, workspace: Path
) -> None:
    """Asked (--check-servers), a wrapped server that advertises the capability is told to
    move to the proxy (its own codex sandbox cannot start inside wrap's); one that does
    not is fine, and doctor passes it."""
    wrap = ["-m", "launcher_probe", "wrap", "--codex", str(fake_codex.path)]
    wrap += ["--cwd", str(workspace), "--", sys.executable]
    scripted = Path(__file__).with_name("scripted_server.py")
    host_env.codex_home.mkdir(exist_ok=True)
    (host_env.codex_home / "config.toml").write_text(
        f"""
[mcp_servers.uses-it]
command = {json.dumps(sys.executable)}
args = {json.dumps([*wrap, "-m", "launcher_probe.examples.shell_server"])}

[mcp_servers.takes-none]
command = {json.dumps(sys.executable)}
args = {json.dumps([*wrap, str(scripted)])}

[mcp_servers.withheld]
command = {json.dumps(sys.executable)}
args = {json.dumps(["-m", "launcher_probe", "wrap", "--codex", "/nonexistent/codex", "--", "x"])}
"""
    )
    options = ("--codex", str(fake_codex.path), "--check-servers")
    done = run_cli("doctor", "--json", *options, env=host_env.env)
    servers = {server["name"]: server for server in json.loads(done.stdout)["servers"]["servers"]}
    uses_it, takes_none = servers["uses-it"], servers["takes-none"]
    assert uses_it["check"]["ok"] and "codex/sandbox-state" in uses_it["check"]["capabilities"]
    assert (uses_it["launcher"], uses_it["reason"]) == ("sent", "wrapped_uses_launcher")
    assert "through launcher-probe proxy instead of wrap" in uses_it["fix"][0]
    assert done.returncode == 3
    assert takes_none["check"]["ok"]
    assert (takes_none["launcher"], takes_none["reason"], takes_none["fix"]) == (
        "not_applicable",
        "wrapped",
        [],
    )
    withheld = servers["withheld"]  # wrap starts nothing, which the check cannot change
    assert (withheld["launcher"], withheld["reason"]) == ("omitted", "not_found")
    assert withheld["detail"].startswith("wrap starts no server: ") and withheld["fix"]
    text = run_cli("doctor", *options, env=host_env.env).stdout
    assert "launcher: sent (wrapped_uses_launcher): it advertises the sandbox capability" in text
    assert "launcher: not applicable (wrapped): it runs in the sandbox as a whole" in text
