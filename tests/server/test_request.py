"""SandboxRequest and AuthorityBinding against real files (the real Codex CLI as the launcher)."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from launcher_probe.contract import (
    SANDBOX_LAUNCHER_KEY,
    SANDBOX_STATE_KEY,
    SANDBOX_STATE_META_KEY,
    LauncherDescriptor,
    Reason,
)
from launcher_probe.errors import ExitCode, InputRejected
from launcher_probe.server.request import (
    AmbiguousSandboxState,
    AuthorityBinding,
    AuthorityChanged,
    LauncherUnavailable,
    MissingSandboxState,
    SandboxRequest,
)
from launcher_probe.state import SandboxState
from tests.server.launchers import elf_named

CAPTURED = Path(__file__).parent.parent / "data" / "codex-0.169.0-tools-call.json"

STATE: dict[str, Any] = {
    "permissionProfile": {"type": "disabled"},
    "sandboxCwd": "file:///tmp/ws",
    "futureField": {"zeta": 1, "alpha": ["ü", 2.5, None, True]},
}
#: What must reach ``--sandbox-state-json``: compact, every field in its original order.
STATE_TEXT = (
    '{"permissionProfile":{"type":"disabled"},"sandboxCwd":"file:///tmp/ws",'
    '"futureField":{"zeta":1,"alpha":["ü",2.5,null,true]}}'
)


#: ``meta_for(state=ABSENT)`` leaves the state key out altogether.
ABSENT = object()


def meta_for(launcher: str | None, state: Any = STATE, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"callId": "call_1", **extra}
    if state is not ABSENT:
        meta[SANDBOX_STATE_KEY] = state
    if launcher is not None:
        meta[SANDBOX_LAUNCHER_KEY] = {"codexExecutable": launcher}
    return meta


def test_all_error_classes_refuse_with_exit_4() -> None:
    for error in (
        LauncherUnavailable,
        MissingSandboxState,
        AmbiguousSandboxState,
        AuthorityChanged,
    ):
        assert issubclass(error, InputRejected)
        assert error.exit_code is ExitCode.REFUSED


def test_command_builds_the_exact_argv(codex: str) -> None:
    request = SandboxRequest.from_meta(meta_for(codex))
    argv = request.command(
        ["-x", "a b"], readable_roots=["/opt/data", "/srv"], disable_network=True
    )
    assert argv == [
        codex,
        "sandbox",
        "--sandbox-state-json",
        STATE_TEXT,
        "--sandbox-state-readable-root",
        "/opt/data",
        "--sandbox-state-readable-root",
        "/srv",
        "--sandbox-state-disable-network",
        "--",
        "-x",
        "a b",
    ]
    assert request.sandbox_available


def test_state_text_is_the_original_value_compact_in_order(codex: str) -> None:
    request = SandboxRequest.from_meta(meta_for(codex))
    assert request.state is not None
    assert request.state.text == STATE_TEXT
    assert json.loads(request.state.text) == STATE
    assert list(request.state.value) == list(STATE)


def test_captured_codex_request_is_read_as_sent(codex: str) -> None:
    meta = json.loads(CAPTURED.read_text())["params"]["_meta"]
    meta[SANDBOX_LAUNCHER_KEY] = {"codexExecutable": codex}  # one that exists here
    argv = SandboxRequest.from_meta(meta).command(["true"])
    sent_state = json.dumps(meta[SANDBOX_STATE_KEY], separators=(",", ":"))
    assert argv == [
        codex,
        "sandbox",
        "--sandbox-state-json",
        sent_state,
        "--",
        "true",
    ]


def test_only_the_deprecated_key_works(codex: str) -> None:
    meta = {
        SANDBOX_STATE_META_KEY: STATE,
        SANDBOX_LAUNCHER_KEY: {"codexExecutable": codex},
    }
    argv = SandboxRequest.from_meta(meta).command(["true"])
    assert argv[3] == STATE_TEXT


def test_identical_copies_under_both_keys_are_accepted(codex: str) -> None:
    meta = meta_for(codex, **{SANDBOX_STATE_META_KEY: json.loads(STATE_TEXT)})
    assert SandboxRequest.from_meta(meta).command(["true"])[3] == STATE_TEXT


@pytest.mark.parametrize(
    "other",
    [
        {**STATE, "sandboxCwd": "file:///elsewhere"},
        {"sandboxCwd": STATE["sandboxCwd"], **STATE},  # same fields, another order
        {**STATE, "futureField": {"zeta": True, "alpha": ["ü", 2.5, None, True]}},  # 1 vs true
        "not an object",
        None,  # present but null: it does not let the other key speak alone
    ],
)
def test_both_keys_differing_is_refused(codex: str, other: Any) -> None:
    meta = meta_for(codex, **{SANDBOX_STATE_META_KEY: other})
    if isinstance(other, dict):
        with pytest.raises(AmbiguousSandboxState, match="carry different states"):
            SandboxRequest.from_meta(meta)
    else:
        # An unusable copy makes the whole state unusable: refused all the same.
        with pytest.raises(MissingSandboxState, match="must be a JSON object"):
            SandboxRequest.from_meta(meta).command(["true"])


def test_a_null_preferred_key_does_not_defer_to_the_deprecated_one(codex: str) -> None:
    meta = meta_for(codex, state=None, **{SANDBOX_STATE_META_KEY: STATE})
    with pytest.raises(MissingSandboxState, match="must be a JSON object"):
        SandboxRequest.from_meta(meta).command(["true"])


@pytest.mark.parametrize(
    ("state", "message"),
    [
        (ABSENT, "sandbox state missing"),
        (None, "sandbox state unusable: sandbox state must be a JSON object"),
        ("{}", "must be a JSON object"),
        ([STATE], "must be a JSON object"),
        ({"nan": float("nan")}, "not JSON"),
        ({"x": "\ud800"}, r"lone surrogate \(\\ud800\), which is not UTF-8"),
        ({"\udfff": 1}, r"lone surrogate \(\\udfff\)"),
    ],
)
def test_missing_or_unusable_state_is_refused(codex: str, state: Any, message: str) -> None:
    request = SandboxRequest.from_meta(meta_for(codex, state=state))
    assert not request.sandbox_available
    with pytest.raises(MissingSandboxState, match=message):
        request.command(["true"])


def _make_file(path: Path, mode: int) -> str:
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(mode)
    return str(path)


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda d: None, "launcher missing: _meta has no codex/sandbox-launcher"),
        (lambda d: "codex", "codexExecutable must be absolute"),
        (lambda d: str(d / "absent"), f"({Reason.NOT_FOUND})"),
        (lambda d: str(d), f"({Reason.NOT_REGULAR_FILE})"),
        (lambda d: _make_file(d / "plain", 0o644), f"({Reason.NOT_EXECUTABLE})"),
        (lambda d: _make_file(d / "shared", 0o777), f"({Reason.UNSAFE_PERMISSIONS})"),
        (lambda d: str(d / "bad\udcff"), f"({Reason.NOT_UTF8})"),
        (lambda d: str(d / "nul\0"), f"({Reason.NOT_FOUND})"),
    ],
)
def test_unusable_launcher_is_refused(tmp_path: Path, setup: Any, message: str) -> None:
    launcher = setup(tmp_path)
    request = SandboxRequest.from_meta(meta_for(launcher))
    assert request.launcher is None
    with pytest.raises(LauncherUnavailable) as raised:
        request.command(["true"])
    assert message in str(raised.value)
    assert str(raised.value).endswith("refusing to run the command")


@pytest.mark.parametrize("value", ["/usr/bin/codex", {"codexExecutable": 7}, {"path": "/x"}])
def test_malformed_launcher_descriptor_is_refused(value: Any) -> None:
    request = SandboxRequest.from_meta({SANDBOX_STATE_KEY: STATE, SANDBOX_LAUNCHER_KEY: value})
    with pytest.raises(LauncherUnavailable, match="is malformed"):
        request.command(["true"])


def test_a_codex_on_path_is_never_used(linked_codex: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{linked_codex.parent}{os.pathsep}{os.environ['PATH']}")
    assert shutil.which("codex") == str(linked_codex)
    with pytest.raises(LauncherUnavailable):
        SandboxRequest.from_meta(meta_for(None)).command(["true"])


def test_opt_out_cannot_come_from_meta() -> None:
    meta = meta_for(None, allow_unsandboxed=True, allowUnsandboxed=True)
    with pytest.raises(LauncherUnavailable):
        SandboxRequest.from_meta(meta).command(["true"])


def test_operator_opt_out_returns_argv_and_warns_every_time(
    caplog: pytest.LogCaptureFixture,
) -> None:
    request = SandboxRequest.from_meta(meta_for(None), allow_unsandboxed=True)
    with caplog.at_level(logging.WARNING, logger="launcher_probe.server.request"):
        assert request.command(["echo", "hi"]) == ["echo", "hi"]
        assert request.command(["echo", "again"]) == ["echo", "again"]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert all("UNSANDBOXED" in r.getMessage() for r in warnings)
    assert "launcher missing" in warnings[0].getMessage()


def test_opt_out_does_not_bypass_ambiguous_state() -> None:
    meta = meta_for(None, **{SANDBOX_STATE_META_KEY: {"other": 1}})
    with pytest.raises(AmbiguousSandboxState):
        SandboxRequest.from_meta(meta, allow_unsandboxed=True)


def test_empty_command_and_relative_roots_are_rejected(codex: str) -> None:
    request = SandboxRequest.from_meta(meta_for(codex))
    with pytest.raises(InputRejected, match="empty"):
        request.command([])
    with pytest.raises(TypeError, match="list of words"):
        request.command("rm -rf /")
    with pytest.raises(InputRejected, match="not absolute"):
        request.command(["ls"], readable_roots=["relative/dir"])
    with pytest.raises(TypeError, match="list of words"):
        request.command(["ls"], readable_roots="/opt")


@pytest.mark.parametrize(
    ("argv", "roots"),
    [(["echo", "a\0b"], []), (["echo", 7], []), (["ls"], ["/opt\0/etc"])],
)
def test_words_execve_cannot_pass_are_rejected(
    codex: str, argv: list[Any], roots: list[str]
) -> None:
    request = SandboxRequest.from_meta(meta_for(codex))
    with pytest.raises(InputRejected, match="not a NUL-free string"):
        request.command(argv, readable_roots=roots)


def test_sdk_meta_objects_are_read_with_their_extra_fields(codex: str) -> None:
    class Meta(BaseModel):  # the MCP SDK 1.x shape: declared fields plus extras
        model_config = ConfigDict(extra="allow", populate_by_name=True)
        progress_token: int | None = Field(default=None, alias="progressToken")

    meta = Meta.model_validate({"progressToken": 1, **meta_for(codex)})
    argv = SandboxRequest.from_meta(meta).command(["true"])
    assert argv[:4] == [codex, "sandbox", "--sandbox-state-json", STATE_TEXT]


@pytest.mark.parametrize("meta", [["x"], "text", 3])
def test_meta_that_is_not_an_object_is_rejected(meta: Any) -> None:
    with pytest.raises(InputRejected, match="_meta must be a JSON object"):
        SandboxRequest.from_meta(meta)


def test_no_meta_at_all_is_refused() -> None:
    with pytest.raises(LauncherUnavailable, match="launcher missing"):
        SandboxRequest.from_meta(None).command(["true"])


# --- AuthorityBinding ---------------------------------------------------------


def test_binding_accepts_the_same_authority(codex: str) -> None:
    meta = meta_for(codex)
    binding = AuthorityBinding.capture(SandboxRequest.from_meta(meta))
    binding.check(SandboxRequest.from_meta(json.loads(json.dumps(meta))))


def test_binding_rejects_another_state(codex: str) -> None:
    binding = AuthorityBinding.capture(SandboxRequest.from_meta(meta_for(codex)))
    other = meta_for(codex, state={**STATE, "sandboxCwd": "file:///other"})
    with pytest.raises(AuthorityChanged, match="sandbox state changed"):
        binding.check(SandboxRequest.from_meta(other))


def test_binding_rejects_another_launcher_path(codex: str, linked_codex: Path) -> None:
    binding = AuthorityBinding.capture(SandboxRequest.from_meta(meta_for(codex)))
    with pytest.raises(AuthorityChanged, match="launcher path, launcher file changed"):
        binding.check(SandboxRequest.from_meta(meta_for(str(linked_codex))))


def test_binding_rejects_a_replaced_or_modified_launcher(linked_codex: Path) -> None:
    meta = meta_for(str(linked_codex))
    binding = AuthorityBinding.capture(SandboxRequest.from_meta(meta))
    replacement = linked_codex.with_name("replacement")
    replacement.symlink_to(os.readlink(linked_codex))
    os.replace(replacement, linked_codex)  # same path, same target, new inode
    with pytest.raises(AuthorityChanged, match=r"^refusing to reuse: launcher file changed"):
        binding.check(SandboxRequest.from_meta(meta))
    binding = AuthorityBinding.capture(SandboxRequest.from_meta(meta))
    os.utime(linked_codex, ns=(1, 1), follow_symlinks=False)  # the hop itself modified
    with pytest.raises(AuthorityChanged, match="launcher file changed"):
        binding.check(SandboxRequest.from_meta(meta))


def test_binding_rejects_a_launcher_that_went_away(linked_codex: Path) -> None:
    meta = meta_for(str(linked_codex))
    binding = AuthorityBinding.capture(SandboxRequest.from_meta(meta))
    later = SandboxRequest.from_meta(meta)
    linked_codex.unlink()
    with pytest.raises(AuthorityChanged, match="launcher file changed"):
        binding.check(later)


def test_binding_rejects_a_launcher_it_could_never_identify(linked_codex: Path) -> None:
    request = SandboxRequest.from_meta(meta_for(str(linked_codex)))  # verified here...
    linked_codex.unlink()  # ...and gone before the binding and every later check
    binding = AuthorityBinding.capture(request)
    with pytest.raises(AuthorityChanged, match=r"^refusing to reuse: launcher file changed"):
        binding.check(request)


def test_binding_without_a_launcher_holds_for_the_same_state() -> None:
    binding = AuthorityBinding.capture(SandboxRequest.from_meta(meta_for(None)))
    binding.check(SandboxRequest.from_meta(meta_for(None)))
    with pytest.raises(AuthorityChanged, match="sandbox state changed"):
        binding.check(SandboxRequest.from_meta(meta_for(None, state={"other": 1})))


def test_server_side_does_not_import_psutil() -> None:
    code = (
        "import sys, launcher_probe.server.request; "
        "print(sorted(m for m in ('psutil', 'filelock', 'platformdirs', 'cachetools') "
        "if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"


# --- the launcher is verified, not taken on trust ----------------------------------


def test_a_shell_as_the_launcher_is_refused(codex: str) -> None:
    sh = shutil.which("sh")
    assert sh is not None
    request = SandboxRequest.from_meta(meta_for(sh))
    assert request.launcher is None and not request.sandbox_available
    assert request.launcher_problem.startswith(f"launcher unusable ({Reason.NOT_CODEX}): ")
    with pytest.raises(LauncherUnavailable, match=r"\(not_codex\).*refusing to run the command"):
        request.command(["true"])


def test_command_checks_the_launcher_again(linked_codex: Path, tmp_path: Path) -> None:
    request = SandboxRequest.from_meta(meta_for(str(linked_codex)))
    assert request.command(["true"])[0] == str(linked_codex)
    replacement = linked_codex.with_name("new-link")
    replacement.symlink_to(elf_named(tmp_path / "impostor", "codex"))
    os.replace(replacement, linked_codex)  # after from_meta, before command
    with pytest.raises(LauncherUnavailable, match=r"\(not_codex\)"):
        request.command(["true"])


def test_a_request_not_made_by_from_meta_is_checked_too(codex: str) -> None:
    sh = shutil.which("sh")
    assert sh is not None
    state = SandboxState.from_value(STATE)
    with pytest.raises(LauncherUnavailable, match=r"\(not_codex\)"):
        SandboxRequest(state, LauncherDescriptor(sh)).command(["true"])
    with pytest.raises(LauncherUnavailable, match="launcher missing"):
        SandboxRequest(state, None).command(["true"])
    with pytest.raises(MissingSandboxState, match="sandbox state missing"):
        SandboxRequest(None, LauncherDescriptor(codex)).command(["true"])


def test_opt_out_never_runs_an_unverified_launcher(caplog: pytest.LogCaptureFixture) -> None:
    sh = shutil.which("sh")
    assert sh is not None
    request = SandboxRequest.from_meta(meta_for(sh), allow_unsandboxed=True)
    with caplog.at_level(logging.WARNING, logger="launcher_probe.server.request"):
        assert request.command(["echo", "hi"]) == ["echo", "hi"]
    assert "UNSANDBOXED" in caplog.text and "(not_codex)" in caplog.text


# --- no input makes from_meta raise anything but the documented errors -------------


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"x": [value]}
    return value


@pytest.mark.parametrize("depth", [495, 990, 100_000])
def test_a_deeply_nested_state_is_unusable(codex: str, depth: int) -> None:
    request = SandboxRequest.from_meta(meta_for(codex, state={**STATE, "deep": nested(depth)}))
    with pytest.raises(MissingSandboxState, match=r"sandbox state unusable: .*nested deeper than"):
        request.command(["true"])


def test_deep_nesting_elsewhere_in_meta_is_harmless(codex: str) -> None:
    meta = meta_for(codex, other=nested(100_000))
    meta[SANDBOX_LAUNCHER_KEY]["extra"] = nested(100_000)
    assert SandboxRequest.from_meta(meta).sandbox_available


@pytest.mark.parametrize(
    "extra",
    [
        [(1, "one")],
        [(None, "null")],
        [((1, 2), "tuple")],
        [("entries", (1, 2))],
        [(1, "one"), ("1", "string one")],
    ],
)
def test_a_state_that_is_not_json_as_given_is_unusable(
    codex: str, extra: list[tuple[Any, Any]]
) -> None:
    state: dict[Any, Any] = {**STATE, **dict(extra)}
    request = SandboxRequest.from_meta(meta_for(codex, state=state))
    assert request.state is None
    with pytest.raises(MissingSandboxState, match="sandbox state unusable"):
        request.command(["true"])


def test_a_state_that_contains_itself_is_unusable(codex: str) -> None:
    state: dict[str, Any] = dict(STATE)
    state["self"] = state
    with pytest.raises(MissingSandboxState, match="sandbox state unusable"):
        SandboxRequest.from_meta(meta_for(codex, state=state)).command(["true"])


def test_meta_with_keys_that_are_not_strings_is_read(codex: str) -> None:
    meta: dict[Any, Any] = {**meta_for(codex), 1: "x", None: [], (2, 3): {}}
    assert SandboxRequest.from_meta(meta).sandbox_available


@pytest.mark.parametrize("path", ["/tmp/\ud800/codex", "/tmp/\udcff/codex", "/\udfff"])
def test_a_launcher_path_with_lone_surrogates_is_not_utf8(path: str) -> None:
    request = SandboxRequest.from_meta(meta_for(path))
    assert request.launcher_problem.startswith(f"launcher unusable ({Reason.NOT_UTF8})")
