"""``ProbeResult.from_json`` takes exactly the shape ``to_json`` writes (issue 9.15)."""

from __future__ import annotations

from typing import Any

import pytest

from launcher_probe.errors import InputRejected
from launcher_probe.host.probe_result import ProbeResult

STEP: dict[str, Any] = {
    "name": "identity",
    "argv": ["/x/codex", "--version"],
    "exit_status": 0,
    "stdout_excerpt": "codex-cli 0.169.0\n",
    "stderr_excerpt": "",
}
PASSED: dict[str, Any] = {
    "ok": True,
    "reason": None,
    "detail": "codex-cli 0.169.0: sandbox capability verified",
    "version": "0.169.0",
    "level": "capability",
    "duration": 0.1,
    "transient": False,
    "steps": [STEP],
    "bubblewrap": {"source": "bundled", "path": "/x/codex-resources/bwrap", "sha256": "a" * 64},
}


def test_its_own_output_parses_back() -> None:
    result = ProbeResult.from_json(PASSED)
    assert result.to_json() == PASSED


def test_a_result_recorded_before_the_bubblewrap_was_reads_as_unknown() -> None:
    older = {key: value for key, value in PASSED.items() if key != "bubblewrap"}
    result = ProbeResult.from_json(older)
    assert result.bubblewrap is None
    assert result.to_json() == {**older, "bubblewrap": None}


@pytest.mark.parametrize(
    "value",
    [
        pytest.param({**PASSED, "extra": 1}, id="extra-key"),
        pytest.param({**PASSED, "path": "/x/codex"}, id="probe-command-key"),
        pytest.param({key: PASSED[key] for key in PASSED if key != "version"}, id="missing-key"),
        pytest.param({**PASSED, "steps": [{**STEP, "pid": 7}]}, id="extra-step-key"),
        pytest.param({**PASSED, "level": "paranoid"}, id="unknown-level"),
        pytest.param({**PASSED, "ok": False, "reason": "no_such_reason"}, id="unknown-reason"),
        pytest.param({**PASSED, "bubblewrap": {"source": "path"}}, id="bubblewrap-keys"),
        pytest.param(
            {**PASSED, "bubblewrap": {"source": "system", "path": "/b", "sha256": None}},
            id="bubblewrap-source",
        ),
        pytest.param(
            {**PASSED, "bubblewrap": {"source": "missing", "path": "/b", "sha256": None}},
            id="bubblewrap-missing-with-a-path",
        ),
        pytest.param(
            {**PASSED, "bubblewrap": {"source": "path", "path": "/b", "sha256": "XY"}},
            id="bubblewrap-sha256",
        ),
    ],
)
def test_any_other_shape_is_rejected_with_a_documented_error(value: dict[str, Any]) -> None:
    with pytest.raises(InputRejected) as raised:
        ProbeResult.from_json(value)
    assert isinstance(raised.value, ValueError)  # what the cache catches
