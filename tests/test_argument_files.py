"""JSON|@FILE arguments (``meta``, ``exec``): only regular files, read with a bound (issue 9.4).

Each run is a real process under a timeout: a FIFO with no writer, a character device or a
directory must be refused at once in one line, never waited on.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import HostEnv, run_cli

#: Long enough for a loaded machine to start Python; far shorter than "forever".
TIMEOUT = 30


def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "fifo"
    os.mkfifo(path)  # nobody ever opens it for writing
    return path


def directory(tmp_path: Path) -> Path:
    path = tmp_path / "dir.json"
    path.mkdir()
    return path


def char_device(tmp_path: Path) -> Path:
    return Path("/dev/zero")


def symlink_to_fifo(tmp_path: Path) -> Path:
    link = tmp_path / "link.json"
    link.symlink_to(fifo(tmp_path))
    return link


NOT_REGULAR = [fifo, directory, char_device, symlink_to_fifo]


def meta_with(option: str, value: str, env: HostEnv) -> tuple[int, str, str]:
    args = {"--capabilities": '{"codex/sandbox-state": {}}', option: value}
    words = [word for pair in args.items() for word in pair]
    done = run_cli("meta", "--transport", "http", *words, env=env.env, timeout=TIMEOUT)
    return done.returncode, done.stdout, done.stderr


def exec_with(value: str, env: HostEnv) -> tuple[int, str, str]:
    done = run_cli("exec", "--meta", value, "--", "true", env=env.env, timeout=TIMEOUT)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("make", NOT_REGULAR)
@pytest.mark.parametrize("option", ["--state", "--caller-meta", "--host-meta", "--capabilities"])
def test_meta_refuses_a_file_that_is_not_regular_without_waiting(
    host_env: HostEnv, tmp_path: Path, make: Callable[[Path], Path], option: str
) -> None:
    path = make(tmp_path)
    code, out, err = meta_with(option, f"@{path}", host_env)
    assert (code, out) == (4, "")
    assert err == f"launcher-probe: cannot read {option} file {str(path)!r}: not a regular file\n"


@pytest.mark.parametrize("make", NOT_REGULAR)
def test_exec_refuses_a_file_that_is_not_regular_without_waiting(
    host_env: HostEnv, tmp_path: Path, make: Callable[[Path], Path]
) -> None:
    path = make(tmp_path)
    code, out, err = exec_with(f"@{path}", host_env)
    assert (code, out) == (4, "")
    assert err == f"launcher-probe: cannot read --meta file {str(path)!r}: not a regular file\n"


def test_a_file_over_the_limit_is_refused_unread(host_env: HostEnv, tmp_path: Path) -> None:
    huge = tmp_path / "huge.json"
    with huge.open("wb") as stream:  # sparse: 1 GiB of zeros that take no disk space
        stream.truncate(1 << 30)
    for code, out, err in (
        meta_with("--caller-meta", f"@{huge}", host_env),
        exec_with(f"@{huge}", host_env),
    ):
        assert (code, out) == (4, "")
        assert err.endswith(f"file {str(huge)!r}: larger than {1 << 18} bytes\n")
        assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("content", "problem"),
    [(b'{"a": "\xff"}', "not UTF-8 (byte 7)"), (None, "No such file or directory")],
)
def test_an_unusable_regular_file_is_one_line(
    host_env: HostEnv, tmp_path: Path, content: bytes | None, problem: str
) -> None:
    path = tmp_path / "meta.json"
    if content is not None:
        path.write_bytes(content)
    for code, out, err in (
        meta_with("--caller-meta", f"@{path}", host_env),
        exec_with(f"@{path}", host_env),
    ):
        assert (code, out) == (4, "")
        assert err.endswith(f"file {str(path)!r}: {problem}\n")
        assert err.count("\n") == 1
