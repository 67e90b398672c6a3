"""Fixtures of the host tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.host.memo_check import memo_agrees_with_discovery, memo_names_what_discovery_finds

#: Tests whose final state the discovery memo replayed (``through_the_memo``).
REPLAYED: list[str] = []


@pytest.fixture
def through_the_memo(request: pytest.FixtureRequest) -> Iterator[None]:
    """After the test, in the state it left (its environment and files): the discovery
    memo names the candidate discovery finds first, and a resolve without an operator
    path decides through the memo as full discovery does."""
    if "host_env" not in request.fixturenames:
        yield
        return
    request.getfixturevalue("host_env")  # so that its environment outlives this check
    yield
    named = memo_names_what_discovery_finds()
    if memo_agrees_with_discovery() or named:
        REPLAYED.append(request.node.nodeid)
