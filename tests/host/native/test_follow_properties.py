"""Properties of following a file to its native binary, over generated file contents:
any bytes are classified, parsed and followed without an error, and a file is only ever
the result when it is a native executable for this host."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from launcher_probe.contract import Reason
from launcher_probe.host.native.file_kind import FileKind, classify, shebang
from launcher_probe.host.native.follow import resolve_native
from launcher_probe.host.native.host_format import header_problem
from launcher_probe.host.native.shims import shell_shim_scripts
from launcher_probe.host.native.trail import Trail
from launcher_probe.host.native.wrappers import wrapper_target
from tests.host.stubs import header

PREFIXES = (
    b"",
    b"#!/bin/sh\n",
    b"#!/usr/bin/env node\n",
    b"\x7fELF",
    b"\xca\xfe\xba\xbe",
    header(),
)
SHELL_WORDS = (b"exec ", b"-a ", b'"$0" ', b'"$@"', b"codex.js", b"$basedir/", b"/", b"\n", b"asdf")
contents = st.builds(
    lambda prefix, parts, tail: prefix + b"".join(parts) + tail,
    st.sampled_from(PREFIXES),
    st.lists(st.sampled_from(SHELL_WORDS), max_size=30),
    st.binary(max_size=300),
)


@given(contents)
def test_any_content_is_classified_and_parsed(content: bytes) -> None:
    kind = classify("/d/codex", content)
    if kind in (FileKind.SCRIPT, FileKind.SHELL_SHIM):
        assert shebang(content) is not None
    if kind is FileKind.NATIVE:
        verdict = header_problem(content)
        assert verdict is None or verdict.startswith(("a ", "an "))
    for script in shell_shim_scripts("/d/codex", content):
        assert script.startswith("/") and script.endswith("codex.js")
    wrapped = wrapper_target("/d/codex", "/d/codex", content, Trail())
    assert wrapped is None or wrapped.target is None or wrapped.target.startswith("/")


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=contents)
def test_a_file_is_the_result_only_when_native_here(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "codex"
    path.write_bytes(content)
    os.chmod(path, 0o755)
    resolution = resolve_native(str(path))
    kind = classify(str(path), content)
    if resolution.native == str(path):
        assert kind is FileKind.NATIVE and header_problem(content) is None
    elif resolution.native is None:
        assert resolution.reason in {
            Reason.SHIM_UNRESOLVED,
            Reason.DISPATCHER_UNRESOLVED,
            Reason.UNRECOGNISED_SCRIPT,
            Reason.WRONG_PLATFORM,
            Reason.NOT_NATIVE,
        }
        assert resolution.detail
