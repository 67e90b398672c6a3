"""The helper under load (issue 19, item 2), beside a bare echo server on the same kind of
socket in the same run: warm ``resolve`` round trips from ``CLIENTS`` clients, closed loop
(each sends its next request when the last is answered: p99 against the echo's, and the
throughput) and open loop (``OPEN_RATE`` requests/s offered in all on ``CLIENTS``
connections of one client process, each timed from when it was due, so a stall is not
hidden: p99 against 1 ms and against the echo's, with how late the client itself sent its
requests beside it: the share of the machine's timer wake-ups). A helper of
its own (not the one of the helper's section), stopped and reaped, with the echo server
and the clients, before ``rows`` returns."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from contextlib import ExitStack
from typing import Protocol, TypeVar

from benchmarks.clients import Clients, EchoServer, OpenLoop
from benchmarks.core import Env, Row, interleaved_medians, percentile
from benchmarks.helper import CLIENTS, Helper

#: Requests per second the open-loop client offers on its connections, and for how long a round.
OPEN_RATE = 5000.0
OPEN_SECONDS = 1.0
#: Open-loop rounds, alternating the helper and the echo server.
OPEN_ROUNDS = 4


class _Client(Protocol):
    def close(self) -> None: ...


_C = TypeVar("_C", bound=_Client)


def _in_turn(
    stack: ExitStack, clients: dict[str, _C], sample: Callable[[str, _C], None], rounds: int
) -> None:
    """``rounds`` rounds of ``sample`` of each of ``clients`` (by server name), in turn;
    then the clients are ended (``stack`` ends them should a round fail)."""
    for client in clients.values():
        stack.callback(client.close)
    interleaved_medians(
        [functools.partial(sample, name, client) for name, client in clients.items()], rounds
    )
    for client in clients.values():
        client.close()


def rows(env: Env, runs: int, requests: int) -> list[Row]:
    """Every row, about ``requests`` closed-loop round trips from each client (over
    ``runs`` rounds, the helper's and the echo's interleaved), then ``OPEN_ROUNDS`` open
    loop rounds of each."""
    request = {"v": 1, "op": "resolve", "codex": env.codex}
    line = json.dumps(request)
    closed: dict[str, list[float]] = {"helper": [], "echo": []}
    walls: dict[str, list[float]] = {"helper": [], "echo": []}
    opened: dict[str, list[float]] = {"helper": [], "echo": []}
    late: dict[str, list[float]] = {"helper": [], "echo": []}
    count = max(1, requests // runs)
    with ExitStack() as stack:
        helper = Helper(env, "helper-load")
        stack.callback(helper.kill)
        answer = helper.exchange(request)  # the helper decides once; warm from here on
        if '"decision":"published"' not in answer.replace(" ", ""):
            raise SystemExit(f"the helper does not publish {env.codex}: {answer[:300]}")
        echo_socket = str(env.scratch / "echo-load.sock")
        stack.callback(EchoServer(env.python, echo_socket, answer).close)
        sockets = {"helper": helper.socket, "echo": echo_socket}

        def closed_loop(name: str, clients: Clients) -> None:
            times, wall = clients.round_trips(CLIENTS, count)
            closed[name].extend(times)
            walls[name].append(wall)

        def open_loop(name: str, client: OpenLoop) -> None:
            times, sent_late = client.offer(OPEN_RATE, OPEN_SECONDS)
            opened[name].extend(times)
            late[name].extend(sent_late)

        each_closed = {
            name: Clients(env.python, path, line, CLIENTS) for name, path in sockets.items()
        }
        _in_turn(stack, each_closed, closed_loop, runs)
        # Connected now, not before the closed loop: an idle connection is closed after 30 s.
        each_open = {
            name: OpenLoop(env.python, path, line, CLIENTS) for name, path in sockets.items()
        }
        _in_turn(stack, each_open, open_loop, OPEN_ROUNDS)
        helper.stop()
    p99 = {name: percentile(times, 0.99) for name, times in closed.items()}
    per_item = {name: sum(walls[name]) / len(closed[name]) for name in closed}
    open_p50 = {name: percentile(times, 0.5) for name, times in opened.items()}
    open_p99 = {name: percentile(times, 0.99) for name, times in opened.items()}
    late_p99 = {name: percentile(times, 0.99) for name, times in late.items()}
    offered = f"open loop, {OPEN_RATE:,.0f}/s offered on {CLIENTS}: p99"
    return [
        Row(
            f"closed loop, {CLIENTS} clients: p99",
            p99["helper"],
            "echo server, same clients",
            p99["echo"],
            1.5,
            note=f"{len(closed['helper']):,} round trips each",
        ),
        Row(
            f"closed loop, {CLIENTS} clients: warm resolves/s",
            per_item["helper"],
            "goal",
            1 / 20_000,
            1.0,
            "/s",
            f"echo {1 / per_item['echo']:,.0f}/s",
        ),
        Row(
            offered,
            open_p99["helper"],
            "1 ms budget",
            1e-3,
            1.0,
            note=(
                f"p50 {open_p50['helper'] * 1e6:.0f} µs; {len(opened['helper']):,} requests; "
                f"sent late p99 {late_p99['helper'] * 1e6:.0f} µs"
            ),
        ),
        Row(
            offered,
            open_p99["helper"],
            "echo server, open loop",
            open_p99["echo"],
            None,
            note=(
                f"echo p50 {open_p50['echo'] * 1e6:.0f} µs; "
                f"sent late p99 {late_p99['echo'] * 1e6:.0f} µs"
            ),
        ),
    ]
