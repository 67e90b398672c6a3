"""Fixtures of the helper tests: a short socket path and a running helper."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import HostEnv
from tests.service.helper import Helper, fresh_socket, running_helper, short_directory


@pytest.fixture
def socket_path() -> Iterator[Path]:
    with short_directory() as directory:
        yield fresh_socket(directory)


@pytest.fixture
def helper(host_env: HostEnv, socket_path: Path) -> Iterator[Helper]:
    with running_helper(host_env.env, socket_path) as running:
        yield running
