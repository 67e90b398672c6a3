"""The wire protocol's parsing and framing (``launcher_probe.service.protocol``)."""

from __future__ import annotations

import json

import pytest

from launcher_probe.service.protocol import (
    ErrorReason,
    ProtocolError,
    encode_result,
    error_line,
    parse_request,
    result_line,
    result_line_from_text,
)


def reason_of(line: bytes) -> ErrorReason:
    with pytest.raises(ProtocolError) as caught:
        parse_request(line)
    return caught.value.reason


def test_a_resolve_request() -> None:
    request = parse_request(b'{"v": 1, "op": "resolve", "codex": "/x", "refresh": true, "id": 7}')
    assert (request.op, request.args, request.id) == (
        "resolve",
        {"codex": "/x", "refresh": True},
        7,
    )


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b"not json", ErrorReason.MALFORMED_REQUEST),
        (b"\xff\xfe", ErrorReason.MALFORMED_REQUEST),
        (b"[1]", ErrorReason.MALFORMED_REQUEST),
        (b'{"v": 1, "op": "status", "op": "status"}', ErrorReason.MALFORMED_REQUEST),
        (b'{"v": NaN, "op": "status"}', ErrorReason.MALFORMED_REQUEST),
        (b'{"op": "status"}', ErrorReason.UNSUPPORTED_VERSION),
        (b'{"v": 2, "op": "status"}', ErrorReason.UNSUPPORTED_VERSION),
        (b'{"v": true, "op": "status"}', ErrorReason.UNSUPPORTED_VERSION),
        (b'{"v": 1.0, "op": "status"}', ErrorReason.UNSUPPORTED_VERSION),
        (b'{"v": 1, "op": "reboot"}', ErrorReason.UNKNOWN_OP),
        (b'{"v": 1}', ErrorReason.UNKNOWN_OP),
        (b'{"v": 1, "op": "status", "id": [1]}', ErrorReason.INVALID_ARGUMENT),
        (b'{"v": 1, "op": "status", "extra": 1}', ErrorReason.INVALID_ARGUMENT),
        (b'{"v": 1, "op": "resolve", "codex": 5}', ErrorReason.INVALID_ARGUMENT),
        (b'{"v": 1, "op": "resolve", "refresh": "yes"}', ErrorReason.INVALID_ARGUMENT),
        (b'{"v": 1, "op": "resolve", "timeout": 0}', ErrorReason.INVALID_ARGUMENT),
        (b'{"v": 1, "op": "resolve", "timeout": 1e9}', ErrorReason.INVALID_ARGUMENT),
        (b'{"v": 1, "op": "resolve", "timeout": true}', ErrorReason.INVALID_ARGUMENT),
        (b'{"v": 1, "op": "meta"}', ErrorReason.INVALID_ARGUMENT),
        (b'{"v": 1, "op": "meta", "server": {"name": "s"}}', ErrorReason.INVALID_ARGUMENT),
        (
            b'{"v": 1, "op": "meta", "server": {"transport": "stdio", "x": 1}}',
            ErrorReason.INVALID_ARGUMENT,
        ),
        (
            b'{"v": 1, "op": "meta", "server": {"transport": "stdio"}, "state": 3}',
            ErrorReason.INVALID_ARGUMENT,
        ),
        (
            b'{"v": 1, "op": "meta", "server": {"transport": "stdio"}, "progress_token": 1.5}',
            ErrorReason.INVALID_ARGUMENT,
        ),
    ],
)
def test_bad_requests_name_their_reason(line: bytes, reason: ErrorReason) -> None:
    assert reason_of(line) == reason


def test_the_id_is_kept_on_errors_after_the_envelope() -> None:
    with pytest.raises(ProtocolError) as caught:
        parse_request(b'{"v": 1, "op": "reboot", "id": "a"}')
    assert caught.value.request_id == "a"


def test_lines_are_single_json_objects() -> None:
    ok = result_line({"path": "/a\nb"}, "x")
    assert ok.count(b"\n") == 1 and ok.endswith(b"\n")
    result = {"schema": 1, "path": "/a\nb"}
    assert json.loads(ok) == {"v": 1, "ok": True, "id": "x", "result": result}
    spliced = result_line_from_text(encode_result({"a": [1]}), 3)
    assert json.loads(spliced) == {"v": 1, "ok": True, "id": 3, "result": {"schema": 1, "a": [1]}}
    bare = result_line_from_text(encode_result({}))
    assert json.loads(bare) == {"v": 1, "ok": True, "result": {"schema": 1}}
    error = json.loads(error_line(ErrorReason.BUSY, "full"))
    assert error == {"v": 1, "ok": False, "error": {"reason": "busy", "detail": "full"}}


def test_a_path_that_is_not_utf8_is_escaped_as_the_cli_escapes_it() -> None:
    line = result_line({"path": "/bad\udcff"})
    line.decode("utf-8")  # valid UTF-8
    assert json.loads(line)["result"]["path"] == "/bad\\xff"
