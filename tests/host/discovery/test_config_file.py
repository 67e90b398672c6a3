"""The operator's config file: whatever it holds, a ConfigError naming it, exit 4 (issue 9.10).

Also the rule for ``resolve_launcher`` (issue 9.14): a decision about the launcher is returned
(Published or Withheld); an unusable config file is refused input and raises ConfigError.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from launcher_probe.errors import ConfigError, ExitCode
from launcher_probe.host.discovery.config_file import MAX_CONFIG_BYTES, configured_codex
from launcher_probe.host.discovery.toml_bounded import MAX_KEY_PARTS
from launcher_probe.host.resolver import resolve_launcher
from tests.conftest import HostEnv, run_cli

STATE = '{"permissionProfile":{"type":"disabled"},"sandboxCwd":"file:///tmp/ws"}'

#: Config texts tomllib cannot take, and what the error says after the file name.
DEEP = "[" * 5000 + "]" * 5000
BAD_CONFIGS = [
    pytest.param(f"x = {DEEP}\n", "nested too deeply", id="deep-arrays"),
    pytest.param("x = " + "{a=" * 3000 + "1" + "}" * 3000, "nested too deeply", id="deep-tables"),
    pytest.param("x = " + "9" * 5000, "cannot be parsed: Exceeds the limit", id="long-integer"),
    pytest.param("# " + "x" * MAX_CONFIG_BYTES, f"larger than {MAX_CONFIG_BYTES} bytes", id="huge"),
    pytest.param(
        ".".join(["a"] * 32000) + " = 1\n",  # 64,004 bytes: 19 s of tomllib before
        f"cannot be parsed: a dotted key of more than {MAX_KEY_PARTS} parts (line 1)",
        id="dotted-key",
    ),
]


def write_config(host_env: HostEnv, text: str) -> Path:
    config = host_env.config_dir / "launcher-probe" / "config.toml"
    config.parent.mkdir(mode=0o700, exist_ok=True)
    config.write_text(text)
    return config


@pytest.mark.parametrize(("text", "problem"), BAD_CONFIGS)
def test_a_config_the_parser_cannot_take_is_a_config_error(
    host_env: HostEnv, text: str, problem: str
) -> None:
    config = write_config(host_env, text)
    with pytest.raises(ConfigError) as raised:
        configured_codex()
    assert str(raised.value).startswith(f"{config}: {problem}")
    with pytest.raises(ConfigError):  # the documented rule: raised, not a Withheld
        resolve_launcher()


@pytest.mark.parametrize(
    "command",
    [
        ("discover",),
        ("discover", "--json"),
        ("resolve",),
        ("resolve", "--json"),
        ("meta", "--transport", "stdio", "--capabilities", '{"codex/sandbox-state": {}}',
         "--state", STATE),
    ],
)  # fmt: skip
def test_every_command_reading_a_deeply_nested_config_exits_4_naming_it(
    host_env: HostEnv, command: tuple[str, ...]
) -> None:
    config = write_config(host_env, f"codex = {DEEP}\n")
    done = run_cli(*command, env=host_env.env)
    assert done.returncode == ExitCode.REFUSED
    assert done.stderr == f"launcher-probe: {config}: nested too deeply\n"
    if "--json" not in command:
        assert done.stdout == ""
        return
    error = {"reason": "config_rejected", "detail": f"{config}: nested too deeply"}
    assert json.loads(done.stdout) == {"schema": 1, "error": error}
