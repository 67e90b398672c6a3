"""The relay with real processes: the proxy between a raw JSON-RPC client and a scripted
server (``scripted_server.py``), the fake codex as the launcher. What the server read is
recorded byte for byte."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import signal
import site
import socket
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from launcher_probe.contract import SANDBOX_LAUNCHER_KEY, SANDBOX_STATE_KEY, SANDBOX_STATE_META_KEY
from tests.fakes import HANG_GUARD, FakeCodex, install_fake_codex
from tests.processes import dies_soon, wait_until
from tests.proxy.client import ProxyClient, proxy_argv
from tests.proxy.conftest import PROXY

STATE = {"permissionProfile": {"type": "disabled"}, "sandboxCwd": "file:///srv/host"}


@pytest.fixture
def record(tmp_path: Path) -> Path:
    return tmp_path / "server.in"


@pytest.fixture
def start(
    env: dict[str, str], tmp_path: Path, workspace: Path, fake_codex: FakeCodex, record: Path
) -> Iterator[Any]:
    """``start(*server_args, options=[...])``: a ProxyClient, closed afterwards."""
    started: list[ProxyClient] = []

    def starter(
        *server_args: str,
        options: tuple[str, ...] = (),
        supervised: bool = True,
        non_blocking: bool = False,
    ) -> ProxyClient:
        policy = [] if "--state" in options else ["--cwd", str(workspace)]
        base = ["--codex", str(fake_codex.path), *policy, *options]
        argv = proxy_argv(base, ["--record", str(record), *server_args])
        environment = env
        if not supervised:  # no supervisor runs where the interpreter has no python name
            interpreter = tmp_path / "embedding-host"
            if not interpreter.is_symlink():  # one for every start of a test
                interpreter.symlink_to(sys.executable)
            argv[0] = str(interpreter)  # outside its venv: given the venv's packages
            packages = os.pathsep.join([env["PYTHONPATH"], *site.getsitepackages()])
            environment = {**env, "PYTHONPATH": packages}
        errlog = tmp_path / "proxy.err"
        client = ProxyClient(argv, env=environment, errlog=errlog, non_blocking=non_blocking)
        started.append(client)
        return client

    yield starter
    for client in started:
        client.close()


def received(record: Path, method: str) -> list[bytes]:
    """The lines the server read whose method is ``method``, as read."""
    return [line for line in record.read_bytes().splitlines(True) if method.encode() in line]


def said_within(errlog: Path, words: str, timeout: float = 30.0) -> str:
    """The proxy's stderr once it holds ``words`` (the renewal runs beside the relay)."""
    deadline = time.monotonic() + timeout
    while words not in (said := errlog.read_text()):
        assert time.monotonic() < deadline, said
        time.sleep(0.01)
    return said


def print_state(env: dict[str, str], *options: str) -> str:
    done = subprocess.run(
        [*PROXY, "--print-state", *options], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_a_call_without_state_gets_the_policy_and_the_launcher(
    start: Any, record: Path, env: dict[str, str], workspace: Path, fake_codex: FakeCodex
) -> None:
    client = start("--capable")
    client.initialize()
    line = (
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"meta","arguments":{},'
        b'"_meta":{"x-host" : {"kept" :  true},"progressToken":"tok","callId":"c1"}}}\n'
    )
    client.send_raw(line)
    meta = client.answer(7)["result"]["structuredContent"]["meta"]
    assert list(meta) == [
        "x-host",
        "callId",
        SANDBOX_STATE_KEY,
        SANDBOX_STATE_META_KEY,
        SANDBOX_LAUNCHER_KEY,
        "progressToken",
    ]
    assert meta[SANDBOX_LAUNCHER_KEY] == {"codexExecutable": str(fake_codex.path)}
    assert meta[SANDBOX_STATE_KEY] == meta[SANDBOX_STATE_META_KEY]
    assert meta["progressToken"] == "tok"
    (sent,) = received(record, "tools/call")
    policy = print_state(env, "--cwd", str(workspace))
    assert f'"{SANDBOX_STATE_KEY}":{policy}'.encode() in sent
    assert b'"x-host" : {"kept" :  true}' in sent  # the host's keys as the host wrote them
    assert sent.startswith(b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":')


def test_a_call_with_no_meta_and_a_resource_read_get_it_too(
    start: Any, record: Path, fake_codex: FakeCodex
) -> None:
    client = start("--capable", options=("--sandbox", "workspace-write"))
    client.initialize()
    meta = client.answer(client.call("meta"))["result"]["structuredContent"]["meta"]
    assert meta[SANDBOX_LAUNCHER_KEY] == {"codexExecutable": str(fake_codex.path)}
    entries = meta[SANDBOX_STATE_KEY]["permissionProfile"]["file_system"]["entries"]
    assert {
        "path": {"type": "special", "value": {"kind": "slash_tmp"}},
        "access": "write",
    } in entries
    read = client.request("resources/read", {"uri": "file:///x"})
    assert SANDBOX_LAUNCHER_KEY in client.answer(read)["result"]["meta"]


def test_a_trusted_hosts_state_passes_untouched_and_only_the_launcher_is_added(
    start: Any, record: Path, fake_codex: FakeCodex
) -> None:
    client = start("--capable", options=("--sandbox", "workspace-write", "--trust-host-state"))
    client.initialize()
    state_text = json.dumps(STATE, separators=(" , ", " :  "))  # spaced, as a host may
    line = (
        '{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"_meta":{"threadId":"t",'
        f'"{SANDBOX_STATE_KEY}":{state_text},"progressToken":3}},"name":"meta"}}}}\n'
    ).encode()
    client.send_raw(line)
    meta = client.answer(8)["result"]["structuredContent"]["meta"]
    assert list(meta) == ["threadId", SANDBOX_STATE_KEY, SANDBOX_LAUNCHER_KEY, "progressToken"]
    assert meta[SANDBOX_STATE_KEY] == STATE
    (sent,) = received(record, "tools/call")
    assert state_text.encode() in sent
    # A host that sends the launcher too: the line reaches the server byte for byte.
    full = line.replace(
        b'"progressToken"', b'"codex/sandbox-launcher":{"codexExecutable":"/x"},"progressToken"'
    )
    full = full.replace(b'"id":8', b'"id":9')
    client.send_raw(full)
    client.answer(9)
    assert received(record, "tools/call")[1] == full


#: A call's line with ``META`` as its ``_meta`` text.
CALL = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"meta","_meta":%s}}\n'
DISABLED = json.dumps(STATE).encode()
FORGED_LAUNCHER = b'{"codexExecutable":"/bin/sh"}'


@pytest.mark.parametrize(
    ("line", "named"),
    [
        (CALL % (20, b'{"codex/sandbox-state":%s}' % DISABLED), "codex/sandbox-state"),
        (CALL % (21, b'{"codex/sandbox-state-meta":%s}' % DISABLED), "codex/sandbox-state-meta"),
        (
            CALL % (22, b'{"codex/sandbox-launcher":%s}' % FORGED_LAUNCHER),
            "codex/sandbox-launcher",
        ),
        (
            CALL % (23, b'{"Codex/Sandbox-State ":%s}' % DISABLED),
            'codex/sandbox-state (as \\"Codex/Sandbox-State \\")',
        ),
        (
            CALL % (24, b'{"codex\\/sandbox\\u002dstate":%s}' % DISABLED),
            "codex/sandbox-state",
        ),
        (  # the method spelled with an escape: no plain "tools/call" in the line
            (CALL % (25, b'{"codex/sandbox-state":%s}' % DISABLED)).replace(
                b"tools/call", b"tools\\u002fcall"
            ),
            "codex/sandbox-state",
        ),
    ],
)
def test_a_call_that_sets_a_sandbox_key_is_refused_and_never_reaches_the_server(
    start: Any, record: Path, line: bytes, named: str
) -> None:
    client = start("--capable")
    client.initialize()
    client.send_raw(line)
    request_id = json.loads(line)["id"]
    error = client.answer(request_id)["error"]
    assert error["code"] == -32602
    assert f"its _meta sets {named}" in json.dumps(error["message"])[1:-1]
    assert "--trust-host-state" in error["message"]
    assert client.answer(client.request("ping"))["result"] == {}  # the relay goes on
    assert received(record, "tools/call") == []  # the server never saw it
    assert b"sandbox" not in record.read_bytes()


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0","id":30,"method":"tools/call","params":{"name":"meta","_meta":{}},'
        b'"params":{"name":"meta","_meta":{"codex/sandbox-state":%s}}}\n' % DISABLED,
        CALL % (31, b'{"x":1,"x":2}'),
        b'{"jsonrpc":"2.0","id":32,"method":"tools/call","params":{"name":"meta"},'
        b'"PARAMS":{"name":"meta","_meta":{"codex/sandbox-state":%s}}}\n' % DISABLED,
        b'{"jsonrpc":"2.0","id":33,"method":"tools/call","params":{"name":"meta",'
        b'"_META":{"codex/sandbox-state":%s}}}\n' % DISABLED,
        b'[{"jsonrpc":"2.0","id":34,"method":"tools/call","params":{"name":"meta"}}]\n',
        b'{"jsonrpc":"2.0","id":35,"method":"tools/call","params":{"name":"meta"}} trailing\n',
        b'{"jsonrpc":"2.0","id":36,"method":"tools/call","params":{"name":"\xff"}}\n',
        # an overlong "/" (not UTF-8), which a lenient decoder could take for "tools/call"
        b'{"jsonrpc":"2.0","id":38,"method":"tools\xc0\xafcall","params":{"name":"meta"}}\n',
    ],
    ids=[
        "params twice",
        "a key twice",
        "PARAMS",
        "_META",
        "batch",
        "trailing",
        "not UTF-8",
        "no marker, not UTF-8",
    ],
)
def test_a_call_a_server_could_read_otherwise_is_refused(
    start: Any, record: Path, line: bytes
) -> None:
    client = start("--capable")
    client.initialize()
    client.send_raw(line)
    error = client.answer(None)["error"]  # no id can be trusted
    assert error["code"] == -32600
    assert "cannot read unambiguously" in error["message"]
    client.answer(client.request("ping"))
    assert received(record, "tools/call") == []


@pytest.mark.parametrize("encoding", ["utf-16-be", "utf-16-le", "utf-16", "utf-32-be", "utf-32"])
def test_a_call_in_utf16_or_utf32_never_reaches_the_server(
    start: Any, record: Path, encoding: str
) -> None:
    """Some readers decode UTF-16 and UTF-32 JSON by themselves (Python's ``json.loads`` of
    bytes, the scripted server's): a forged call so written, which names no method in
    UTF-8, is refused all the same, and nothing of it reaches the server."""
    client = start("--capable")
    client.initialize()
    forged = CALL % (37, b'{"codex/sandbox-state":%s}' % DISABLED)
    client.send_raw(forged.rstrip(b"\n").decode().encode(encoding) + b"\n")
    error = client.answer(None)["error"]  # no id can be trusted
    assert error["code"] == -32600
    assert "cannot read unambiguously" in error["message"]
    assert client.answer(client.request("ping"))["result"] == {}
    assert b"\0" not in record.read_bytes()


def test_what_a_host_chose_to_send_is_not_kept_nor_said_in_full(start: Any, tmp_path: Path) -> None:
    """Refusals that quote a key the host sent (a look-alike of ``params``, a megabyte of
    it, another each time): each answer and each line said is cut short, and the proxy
    keeps none of them in full (it held every one: 289 MiB after 60 of 2 MB)."""
    client = start("--capable")
    client.initialize()
    rss = []
    for number in range(24):
        key = "PARAMS" + " " * ((1 << 20) + number)
        client.send_raw(b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","%s":{}}\n' % (
            number, key.encode()))  # fmt: skip
        message = client.answer(None)["error"]["message"]  # no id can be trusted
        assert "cannot read unambiguously" in message and len(message) < 1200
        rss.append(psutil.Process(client.process.pid).memory_info().rss)
    assert (tmp_path / "proxy.err").stat().st_size < 24 * 1200
    assert rss[-1] - rss[4] < 8 << 20  # flat after the first few (not 1 MiB each)


def test_before_the_server_says_a_call_gets_nothing_added_and_a_forged_one_is_refused(
    start: Any, record: Path
) -> None:
    """A call the host sends before the server's initialize answer (pipelined) is relayed
    with nothing added (no launcher: the server refuses), one that sets a sandbox key is
    refused, and a notification that sets one is dropped."""
    client = start("--capable")
    plain = CALL % (40, b"{}")
    forged = CALL % (41, b'{"codex/sandbox-state":%s}' % DISABLED)
    notification = (
        b'{"jsonrpc":"2.0","method":"tools/call","params":{"_meta":{"codex/sandbox-state":%s}}}\n'
    )
    client.send_raw(plain + forged + notification % DISABLED)
    assert client.answer(41)["error"]["code"] == -32602
    assert client.answer(40)["result"]["structuredContent"]["meta"] == {}
    assert received(record, "tools/call") == [plain]
    dropped = "a notification refused, not relayed: its _meta sets codex/sandbox-state"
    said_within(record.parent / "proxy.err", dropped)


def test_a_server_without_the_capability_gets_nothing_and_the_proxy_says_so_once(
    start: Any, record: Path, tmp_path: Path
) -> None:
    client = start()
    client.initialize()
    lines = [
        b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"meta"}}\n' % n
        for n in (11, 12)
    ]
    for number, line in zip((11, 12), lines, strict=True):
        client.send_raw(line)
        assert client.answer(number)["result"]["structuredContent"]["meta"] is None
    assert received(record, "tools/call") == lines
    assert client.finish() == 0
    said = (tmp_path / "proxy.err").read_text()
    assert said.count("advertises neither codex/sandbox-state nor") == 1, said
    assert "scripted server: started\n" in said  # the server's stderr is the host's


@pytest.mark.parametrize(
    "forged",
    [
        b'{"codex/sandbox-state":%s}' % DISABLED,
        b'{"codex/sandbox-launcher":{"codexExecutable":"/bin/sh"}}',
        b'{},"_meta":{"codex/sandbox-state":%s}' % DISABLED,  # _meta twice: readers differ
        b'{},"_META":{"codex/sandbox-state":%s}' % DISABLED,  # Go's reader folds case
    ],
    ids=["state", "launcher", "meta-twice", "meta-in-another-case"],
)
def test_a_forged_call_is_refused_even_to_a_server_that_advertised_nothing(
    start: Any, record: Path, forged: bytes
) -> None:
    """What a server advertises can be learnt wrong (the SDK's low-level ``Server`` leaves
    its experimental capabilities out of its ``server/discover`` answer), so a host's
    sandbox keys, or a call the server could read otherwise, never reach any server
    unless the host is trusted: here one that advertised nothing is spared them too."""
    client = start()
    client.initialize()
    client.send_raw(CALL % (50, forged))
    refused = client.read()  # under its id, or null where no id can be trusted
    assert (refused["id"], refused["error"]["code"]) in ((50, -32602), (None, -32600)), refused
    plain = CALL % (51, b"{}")
    client.send_raw(plain)
    assert client.answer(51)["result"]["structuredContent"]["meta"] == {}
    assert received(record, "tools/call") == [plain]


def test_capabilities_are_learnt_from_server_discover(start: Any, fake_codex: FakeCodex) -> None:
    client = start("--capable")
    client.answer(client.request("server/discover", {}))
    meta = client.answer(client.call("meta"))["result"]["structuredContent"]["meta"]
    assert meta[SANDBOX_LAUNCHER_KEY] == {"codexExecutable": str(fake_codex.path)}


def test_server_requests_notifications_and_cancellation_go_both_ways(start: Any) -> None:
    client = start("--capable")
    client.initialize()
    asked = client.call("ask", _meta={"progressToken": "p"})
    progress = client.read()
    assert progress["method"] == "notifications/progress"
    assert progress["params"]["progressToken"] == "p"
    sampling = client.read()
    assert sampling["method"] == "sampling/createMessage" and sampling["id"] == "from-server"
    client.send({"id": "from-server", "result": {"role": "assistant", "content": "hi"}})
    reply = client.answer(asked)["result"]["structuredContent"]["client"]
    assert reply == {
        "jsonrpc": "2.0",
        "id": "from-server",
        "result": {"role": "assistant", "content": "hi"},
    }
    client.send({"method": "notifications/cancelled", "params": {"requestId": asked}})
    assert client.read()["params"]["data"] == f"cancelled {asked}"
    client.answer(client.request("ping"))


def test_invalid_json_and_many_messages_in_one_write_pass_as_they_came(
    start: Any, record: Path
) -> None:
    client = start("--capable")
    client.initialize()
    batch = b"{not json\n" + b"".join(
        b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % n for n in range(100, 150)
    )
    client.send_raw(batch)
    assert client.read()["error"]["code"] == -32700
    assert [client.read()["id"] for _ in range(50)] == list(range(100, 150))
    assert record.read_bytes().endswith(batch)


def test_a_32_mib_result_and_a_large_request_arrive_whole(start: Any, record: Path) -> None:
    client = start("--capable")
    client.initialize()
    size = 32 << 20
    answer = client.answer(client.call("big", {"size": size}))
    assert answer["result"]["content"][0]["text"] == "x" * size
    padding = "y" * (3 << 20)  # a request spanning many reads, rewritten
    meta = client.answer(client.call("meta", {"pad": padding}))["result"]["structuredContent"]
    assert SANDBOX_STATE_KEY in meta["meta"]


def peak_rss(pid: int) -> int:
    """The process's own peak RSS (``VmHWM``), in bytes."""
    status = Path(f"/proc/{pid}/status").read_text()
    return (
        int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1])
        << 10
    )


def test_a_server_message_longer_than_the_proxy_reads_passes_on_as_it_comes(
    start: Any, record: Path
) -> None:
    """A sandboxed server that never ends its line costs the proxy no more memory: past
    what the proxy ever reads of a message (4 MiB), the rest goes on as it comes."""
    client = start("--capable")
    client.initialize()
    size = 128 << 20
    answer = client.answer(client.call("long", {"size": size}))
    assert len(answer["result"]["content"][0]["text"]) == size
    assert peak_rss(client.process.pid) < 64 << 20  # held whole, it would be over 128 MiB
    assert client.answer(client.request("ping"))["result"] == {}  # the relay goes on


def test_the_proxys_own_answer_never_lands_inside_a_long_server_message(start: Any) -> None:
    """The server stops half-way through a long message until it reads the next line: the
    proxy's refusal of a call sent meanwhile waits for the message's end."""
    client = start("--capable")
    client.initialize()
    size = 8 << 20
    client.call("long", {"size": size, "pause": 6 << 20})
    fd = client.stdout.fileno()
    assert select.select([fd], [], [], 30)[0]  # the message is under way, unended
    client.buffer = os.read(fd, 1 << 16)
    assert b"\n" not in client.buffer
    client.send_raw(CALL % (70, b'{"codex/sandbox-state":%s}' % DISABLED))
    ping = client.request("ping")  # the server reads it, then ends the message
    assert len(client.read()["result"]["content"][0]["text"]) == size
    assert {client.read()["id"], client.read()["id"]} == {70, ping}


def test_a_long_server_message_cut_short_leaves_the_proxys_answer_a_line_of_its_own(
    start: Any,
) -> None:
    """The server dies half-way through a long message (waiting for a line, it finds the
    end of its stdin); the refusal held until the message's end still reaches the host as
    a line of its own, after the message cut short, which is ended with a newline."""
    client = start("--capable")
    client.initialize()
    client.call("long", {"size": 8 << 20, "pause": 6 << 20})
    assert select.select([client.stdout.fileno()], [], [], 30)[0]  # under way, unended
    client.send_raw(CALL % (70, b'{"codex/sandbox-state":%s}' % DISABLED))
    client.stdin.close()
    cut = client.read_line()
    assert len(cut) == (6 << 20) + 1 and cut.endswith(b"xxx\n")  # the 6 MiB written
    assert client.read()["id"] == 70
    assert client.read_line() == b""


def test_an_initialize_answer_past_4_mib_teaches_nothing_and_the_proxy_says_so(
    start: Any, tmp_path: Path
) -> None:
    client = start("--capable", "--instructions", str(5 << 20))
    assert "codex/sandbox-state" in client.initialize()["result"]["capabilities"]["experimental"]
    meta = client.answer(client.call("meta"))["result"]["structuredContent"]["meta"]
    assert meta is None  # nothing added: the server was never learnt to take the state
    said = said_within(tmp_path / "proxy.err", "longer than 4 MiB passed unread")
    assert "while its initialize (or server/discover) answer was awaited" in said


@pytest.mark.parametrize("instructions", [0, 5 << 20], ids=["learnt", "passed unread"])
def test_a_stderr_whose_reader_left_costs_the_relay_nothing(
    env: dict[str, str], fake_codex: FakeCodex, workspace: Path, instructions: int
) -> None:
    """What the proxy says of the server's initialize answer (that it advertises nothing,
    or that it passed unread) fails on a stderr nobody reads any more: the relay goes on."""
    options = ["--codex", str(fake_codex.path), "--cwd", str(workspace)]
    argv = proxy_argv(options, ["--instructions", str(instructions)])
    err_read, err_write = os.pipe()
    os.close(err_read)  # whatever is written there fails (EPIPE)
    client = ProxyClient(argv, env=env, errlog=err_write)
    os.close(err_write)
    try:
        client.initialize()
        assert client.answer(client.request("ping"))["result"] == {}
        assert client.finish() == 0
    finally:
        client.close()


#: Past the 64 MiB the proxy holds of a host's message.
LONG_PAD = b"y" * (65 << 20)


@pytest.mark.parametrize(
    ("template", "answered"),
    [
        (b'{"jsonrpc":"2.0","id":80,"method":"tools/call","params":%s}\n', 80),
        (b'{"method":"tools/call","params":%s,"jsonrpc":"2.0","id":"eighty"}\n', "eighty"),
        (b'{"method":"tools/call","params":%s,"id":80,"jsonrpc":"2.0"}\n', 80),
        (b'{"jsonrpc":"2.0","method":"tools/call","params":%s,"id":[80],"x":1}\n', None),
        (b'{"id":80,"method":"tools/call","params":%s,"id":81}\n', None),
        (b'{"id":80,"method":"tools/call","x":%s,"params":%%s}\n' % (b"[" * 70_000), 80),
        (b'{"method":"tools/call","params":%s,"id":0123}\n', None),
        (b'{"method":"tools/call","params":%%s,"id":%s}\n' % (b"1" * 5000), None),
    ],
    ids=[
        "id first",
        "id last",
        "id before a last member",
        "no plain id",
        "two ids",
        "deep",
        "no JSON number",
        "past Python's digits",
    ],
)
def test_a_host_message_longer_than_64_mib_is_dropped_and_answered_under_its_id(
    start: Any, record: Path, template: bytes, answered: object
) -> None:
    """The proxy reads the id from the message's first bytes (Python's SDK writes it
    before the params) or from its last (TypeScript's writes it after them), so the host's
    SDK can match the error to its request; null when neither tells one id."""
    client = start("--capable")
    client.initialize()
    client.send_raw(template % b'{"name":"meta","arguments":{"pad":"%s"}}' % LONG_PAD)
    error = client.read()
    assert error["id"] == answered and error["error"]["code"] == -32600
    assert "a message longer than 64 MiB" in error["error"]["message"]
    assert received(record, "tools/call") == []
    assert client.answer(client.request("ping"))["result"] == {}  # the relay goes on


def test_a_hosts_answer_longer_than_64_mib_to_the_servers_request_gets_the_server_an_error(
    start: Any, record: Path
) -> None:
    """The server waits for the host's answer to its own request (sampling): the proxy,
    which drops the answer, sends it an error under that request's id instead."""
    client = start("--capable")
    client.initialize()
    asked = client.call("ask", _meta={"progressToken": "p"})
    assert client.read()["method"] == "notifications/progress"
    assert client.read()["id"] == "from-server"
    client.send_raw(b'{"jsonrpc":"2.0","id":"from-server","result":{"pad":"%s"}}\n' % LONG_PAD)
    reply = client.answer(asked)["result"]["structuredContent"]["client"]
    assert reply["id"] == "from-server" and reply["error"]["code"] == -32603
    assert "answer was a message longer than 64 MiB" in reply["error"]["message"]
    assert b"yyyy" not in record.read_bytes()


def test_a_trusted_hosts_message_longer_than_64_mib_passes_unread_where_nothing_is_read(
    start: Any, record: Path
) -> None:
    """A trusted host's server that takes no state reads the host's messages unseen anyway
    (a message the proxy cannot read passes as it came): a long one passes too, unread."""
    client = start(options=("--trust-host-state",))
    client.initialize()
    line = b'{"jsonrpc":"2.0","id":80,"method":"tools/call","params":{"name":"meta",'
    client.send_raw(line + b'"arguments":{"pad":"%s"}}}\n' % LONG_PAD)
    assert client.answer(80)["result"]["structuredContent"] == {"meta": None}
    assert received(record, "tools/call")[0].startswith(line)
    assert client.answer(client.request("ping"))["result"] == {}


def test_a_hosts_non_blocking_stdin_and_stdout_carry_every_message_whole(
    start: Any, record: Path
) -> None:
    client = start("--capable", non_blocking=True)  # between two messages: an empty stdin
    client.initialize()
    size = 4 << 20  # fills the host's stdout many times over
    answer = client.answer(client.call("big", {"size": size}))
    assert answer["result"]["content"][0]["text"] == "x" * size
    padding = "y" * (3 << 20)  # a request spanning many reads, rewritten
    meta = client.answer(client.call("meta", {"pad": padding}))["result"]["structuredContent"]
    assert SANDBOX_STATE_KEY in meta["meta"]
    assert client.finish() == 0
    assert len(received(record, "tools/call")) == 2


def test_a_server_that_crashes_mid_call_closes_the_host_and_sets_the_status(start: Any) -> None:
    client = start("--capable")
    client.initialize()
    client.call("crash")
    assert client.read_line() == b""
    assert client.process.wait(30) == 7


def started_below(client: ProxyClient, pidfile: Path, *, supervised: bool) -> int:
    """The server's pid, once it checked that the server is (supervised) or is not the
    proxy's own child."""
    server = int(pidfile.read_text())
    assert (psutil.Process(server).ppid() == client.process.pid) is not supervised
    return server


@pytest.mark.parametrize("supervised", [True, False])
def test_stdin_end_stops_the_server_and_its_daemon(
    start: Any, tmp_path: Path, supervised: bool
) -> None:
    pidfile, server_pidfile = tmp_path / "daemon.pid", tmp_path / "server.pid"
    args = ("--daemon", str(pidfile), "--pidfile", str(server_pidfile))
    client = start(*args, supervised=supervised)
    client.initialize()
    started_below(client, server_pidfile, supervised=supervised)
    daemon = int(pidfile.read_text())
    assert client.finish() == 0
    assert dies_soon(daemon)


@pytest.mark.parametrize("supervised", [True, False])
def test_a_server_that_ignores_stdin_end_is_killed_after_the_grace(
    start: Any, tmp_path: Path, supervised: bool
) -> None:
    pidfile, server_pidfile = tmp_path / "daemon.pid", tmp_path / "server.pid"
    args = ("--ignore-eof", "--daemon", str(pidfile), "--pidfile", str(server_pidfile))
    client = start(*args, options=("--grace", "0.2"), supervised=supervised)
    client.initialize()
    server = started_below(client, server_pidfile, supervised=supervised)
    daemon = int(pidfile.read_text())
    assert client.finish() == 128 + signal.SIGKILL
    assert dies_soon(server)
    assert dies_soon(daemon)


def unread(fd: int) -> int:
    """How many bytes wait unread in the pipe ``fd`` reads."""
    return int(struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0" * 4))[0])


def test_stdin_end_reaches_the_server_while_the_host_reads_nothing_and_a_call_was_refused(
    start: Any,
) -> None:
    """The host stops reading while the server floods it, so the server-to-host relay waits
    on the host's stdout; a call the proxy refuses then must not wait behind it: the host's
    stdin end still reaches the server, and the grace period still ends it."""
    client = start("--capable", options=("--grace", "0.2"))
    client.initialize()
    client.call("notify", {"count": 200_000})  # some 18 MB: more than the pipe holds
    wait_until(lambda: unread(client.stdout.fileno()) >= 60_000)  # the pipe is full
    client.send_raw(CALL % (70, b'{"codex/sandbox-state":%s}' % DISABLED))
    client.stdin.close()
    assert client.process.wait(30) == 128 + signal.SIGKILL


@contextlib.contextmanager
def all_die_soon(*pids: int) -> Iterator[None]:
    """The block, after which each of ``pids`` must die soon; what a failure left is killed."""
    try:
        yield
        for pid in pids:
            assert dies_soon(pid), pid
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_a_sigkilled_proxy_leaves_nothing_of_the_server_running(start: Any, tmp_path: Path) -> None:
    """The server ignores its stdin's end and has a daemon that left its session: the
    proxy's death, by the one signal it cannot catch, still takes both."""
    pidfile, daemon_pidfile = tmp_path / "server.pid", tmp_path / "daemon.pid"
    client = start("--ignore-eof", "--pidfile", str(pidfile), "--daemon", str(daemon_pidfile))
    client.initialize()
    server = started_below(client, pidfile, supervised=True)
    daemon = int(daemon_pidfile.read_text())
    assert not dies_soon(server, 0.2)  # it runs, and would go on running
    with all_die_soon(server, daemon):
        client.process.kill()
        assert client.process.wait(30) == -signal.SIGKILL


def test_sigterm_to_every_process_of_the_tree_leaves_nothing_running(
    start: Any, tmp_path: Path
) -> None:
    """As VS Code stops a stdio server (SIGTERM to each descendant, then SIGKILL): the
    supervisor outlives the first round, so the server, which ignores SIGTERM, and its
    daemon are killed after the grace, not left to init."""
    pidfile, daemon_pidfile = tmp_path / "server.pid", tmp_path / "daemon.pid"
    args = ("--ignore-eof", "--ignore-term", "--pidfile", str(pidfile))
    client = start(*args, "--daemon", str(daemon_pidfile), options=("--grace", "0.5"))
    client.initialize()
    server = started_below(client, pidfile, supervised=True)
    daemon = int(daemon_pidfile.read_text())
    proxy = psutil.Process(client.process.pid)
    tree = [proxy, *proxy.children(recursive=True)]
    assert {server, daemon} < {process.pid for process in tree}
    with all_die_soon(server, daemon):
        for process in tree:
            process.send_signal(signal.SIGTERM)
        assert client.process.wait(30) == 128 + signal.SIGKILL  # the server's, after the grace


#: A server whose clean-up on its first SIGINT says it began, waits for the host's ``go``
#: line, then says it is done and exits 3.
CLEANING_SERVER = """\
import json, os, signal, sys
def say(data):
    print(json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                      "params": {"data": data}}), flush=True)
def cleaned(number, frame):
    # the proxy forwards the host's signal too, at any time: one clean-up, then none
    # (exiting would restore SIGINT's default, so a late one would end it with 130)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if cleaning:
        return
    cleaning.append(number)
    say("cleaning")
    while not os.read(0, 64).endswith(b"\\n"):
        pass
    say("cleaned up")
    sys.exit(3)
cleaning = []
signal.signal(signal.SIGINT, cleaned)
for line in sys.stdin:
    asked = json.loads(line)
    print(json.dumps({"jsonrpc": "2.0", "id": asked["id"], "result": {}}), flush=True)
"""


def ignores(process: psutil.Process, number: int) -> bool:
    """Whether ``process`` ignores signal ``number`` (its ``SigIgn`` mask)."""
    with open(f"/proc/{process.pid}/status") as status:
        (mask,) = [line.split()[1] for line in status if line.startswith("SigIgn:")]
    return bool(int(mask, 16) >> (number - 1) & 1)


def test_sigint_to_every_process_of_the_tree_lets_the_server_clean_up(
    env: dict[str, str], tmp_path: Path, fake_codex: FakeCodex
) -> None:
    """A signal each process of the tree gets at once is the proxy's to act on: the
    supervisor ignores it (an ignored signal is dropped as it is sent), so the server
    ends as it chooses, never killed on the way."""
    argv = [*PROXY, "--codex", str(fake_codex.path), "--", sys.executable, "-c", CLEANING_SERVER]
    client = ProxyClient(argv, env=env, errlog=tmp_path / "proxy.err")
    try:
        client.answer(client.request("ping"))  # the server's handler is in place
        proxy = psutil.Process(client.process.pid)
        tree = [proxy, *proxy.children(recursive=True)]
        assert len(tree) == 4  # the proxy, the supervisor's two processes, the server
        for process in tree:
            process.send_signal(signal.SIGINT)
        assert client.read()["params"]["data"] == "cleaning"
        assert all(ignores(process, signal.SIGINT) for process in tree[1:3])
        client.send_raw(b"go\n")
        assert client.read()["params"]["data"] == "cleaned up"
        assert client.process.wait(30) == 3
    finally:
        client.close()


def test_a_host_that_resets_the_connection_ends_the_proxy_and_leaves_nothing(
    env: dict[str, str], tmp_path: Path, workspace: Path, fake_codex: FakeCodex
) -> None:
    """A host on one socket for stdin and stdout that closes it with an answer unread: the
    proxy's read fails (ECONNRESET), which ends the host's input as its end would. The
    server gets its EOF, its tree goes, and the proxy exits with its status, with no
    traceback."""
    pidfile = tmp_path / "daemon.pid"
    options = ["--codex", str(fake_codex.path), "--cwd", str(workspace)]
    argv = proxy_argv(options, ["--capable", "--daemon", str(pidfile)])
    host, theirs = socket.socketpair()
    errlog = tmp_path / "proxy.err"
    with errlog.open("wb") as stderr:
        fd = theirs.fileno()
        proxy = subprocess.Popen(argv, stdin=fd, stdout=fd, stderr=stderr, env=env)
    theirs.close()
    try:
        host.sendall(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}\n')
        answers = host.makefile("rb")
        assert json.loads(answers.readline())["id"] == 1
        host.sendall(b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n')
        assert select.select([host], [], [], 30)[0]  # its answer came, and stays unread
        answers.close()
        host.close()
        assert proxy.wait(30) == 0
    finally:
        if proxy.poll() is None:
            proxy.kill()
            proxy.wait()
    assert dies_soon(int(pidfile.read_text()))
    assert "Traceback" not in errlog.read_text()


@pytest.mark.parametrize(
    "number",
    [signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGALRM],
)
@pytest.mark.parametrize("supervised", [True, False])
def test_a_signal_goes_to_the_server_and_nothing_is_left(
    start: Any, tmp_path: Path, number: int, supervised: bool
) -> None:
    pidfile = tmp_path / "daemon.pid"
    client = start("--daemon", str(pidfile), supervised=supervised)
    client.initialize()
    daemon = int(pidfile.read_text())
    client.process.send_signal(number)
    assert client.process.wait(30) == 128 + number
    assert dies_soon(daemon)


def test_a_signal_during_the_clean_up_leaves_nothing_where_no_supervisor_runs(
    start: Any, tmp_path: Path
) -> None:
    """Without a supervisor the proxy itself kills what the server left (a daemon) once the
    server has exited; a SIGTERM that comes then is forwarded, not an unwind halfway through
    that clean-up: the daemon goes every time (it was left in 4 runs of 60)."""
    for run in range(16):
        pidfile = tmp_path / f"daemon-{run}.pid"
        client = start("--daemon", str(pidfile), supervised=False)
        client.initialize()
        daemon = int(pidfile.read_text())
        children = psutil.Process(client.process.pid).children()  # the daemon too:
        (server,) = [child for child in children if child.pid != daemon]  # a subreaper's
        assert client.stdin is not None
        client.stdin.close()  # the server exits at its input's end
        server.wait(30)  # (reaped by the proxy: psutil sees it gone)
        client.process.send_signal(signal.SIGTERM)
        client.process.wait(30)
        assert dies_soon(daemon), f"run {run}: the daemon outlived the proxy"


@pytest.mark.parametrize("end", ["eof", "sigterm"])
def test_a_proxy_that_ends_while_it_resolves_again_leaves_no_probe_directory(
    start: Any, fake_codex: FakeCodex, tmp_path: Path, env: dict[str, str], end: str
) -> None:
    """The binary changed, so the proxy probes it again beside the relay; the host ends it
    (its input's end, or SIGTERM) while that probe runs: it waits (within its grace) for
    the probe, which removes its private directory, before it exits."""
    temporary = tmp_path / "tmp"  # the proxy's own: its probes' directories alone
    temporary.mkdir()
    env["TMPDIR"] = str(temporary)
    client = start("--capable")
    client.initialize()
    install_fake_codex(fake_codex.path.parent)  # a new file at the same path
    gate = tmp_path / "gate"
    fake_codex.set_fault("slow_start", seconds=HANG_GUARD, gate=str(gate))
    client.answer(client.call("meta"))  # left out: binary_changed, and probed again
    wait_until(lambda: fake_codex.probe_count() == 2)  # the renewal's probe has started
    (made,) = temporary.glob("launcher-probe-*")
    if end == "eof":
        assert client.stdin is not None
        client.stdin.close()
    else:
        client.process.send_signal(signal.SIGTERM)
    # The server's supervisor goes first (the renewal's stays, probing): the proxy ends.
    wait_until(lambda: len(psutil.Process(client.process.pid).children()) == 1)
    assert client.process.poll() is None  # it waits for the probe, which waits for the gate
    gate.touch()
    client.process.wait(30)
    assert not made.exists()


def test_a_replaced_binary_is_left_out_once_then_resolved_again(
    start: Any, fake_codex: FakeCodex, tmp_path: Path
) -> None:
    client = start("--capable")
    client.initialize()

    def launcher() -> object:
        meta = client.answer(client.call("meta"))["result"]["structuredContent"]["meta"]
        return meta.get(SANDBOX_LAUNCHER_KEY)

    assert launcher() == {"codexExecutable": str(fake_codex.path)}
    install_fake_codex(fake_codex.path.parent)  # a new file at the same path
    assert launcher() is None
    errlog = tmp_path / "proxy.err"
    said = said_within(errlog, "launcher resolved again: published")
    assert "launcher left out (binary_changed): " in said
    assert "changed since it was verified" in said
    assert launcher() == {"codexExecutable": str(fake_codex.path)}
    install_fake_codex(fake_codex.path.parent)  # and again: said again, as news
    assert launcher() is None
    wait_until(lambda: errlog.read_text().count("launcher resolved again: published") == 2)
    said = errlog.read_text()
    assert said.count("launcher left out (binary_changed): ") == 2
    assert launcher() == {"codexExecutable": str(fake_codex.path)}


def test_a_missing_command_is_refused_with_a_json_report(
    env: dict[str, str], tmp_path: Path
) -> None:
    argv = [*PROXY, "--codex", "/nowhere/codex", "--json", "--", str(tmp_path / "absent")]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert done.returncode == 4
    assert json.loads(done.stdout)["error"]["reason"] == "input_rejected"
    assert "cannot execute" in done.stderr


def test_no_command_is_a_usage_error(env: dict[str, str]) -> None:
    done = subprocess.run([*PROXY], env=env, capture_output=True, text=True)
    assert done.returncode == 2 and "proxy needs the command to run, after --" in done.stderr
    assert os.path.basename(sys.executable)


def test_the_command_may_come_without_dashes(
    env: dict[str, str], tmp_path: Path, fake_codex: FakeCodex
) -> None:
    """Some hosts (the MCP Inspector's CLI) drop the ``--`` before the server's command."""
    argv = proxy_argv(["--codex", str(fake_codex.path)], ["--capable"])
    argv.remove("--")
    client = ProxyClient(argv, env=env, errlog=tmp_path / "proxy.err")
    try:
        assert (
            "codex/sandbox-state" in client.initialize()["result"]["capabilities"]["experimental"]
        )
        assert client.finish() == 0
    finally:
        client.close()


def test_a_state_file_is_used_verbatim_on_one_line(
    start: Any, record: Path, tmp_path: Path
) -> None:
    state_file = tmp_path / "state.json"
    state_file.write_text(json.dumps(STATE, indent=2) + "\n")
    client = start("--capable", options=("--state", f"@{state_file}"))
    client.initialize()
    meta = client.answer(client.call("meta"))["result"]["structuredContent"]["meta"]
    assert meta[SANDBOX_STATE_KEY] == STATE
    (sent,) = received(record, "tools/call")
    spaced = json.dumps(STATE, indent=2).replace("\n", " ")
    assert f'"{SANDBOX_STATE_KEY}":{spaced}'.encode() in sent


#: A server whose answer to initialize is nested past any parser's stack, then a notification.
DEEP_SERVER = """\
import sys
sys.stdin.readline()
print('{"jsonrpc":"2.0","id":0,"result":{},"x":' + "[" * 100000 + "]" * 100000 + "}", flush=True)
print('{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"after"}}', flush=True)
sys.stdin.read()
"""


def test_an_answer_nested_past_the_parsers_stack_passes_and_so_does_what_follows(
    env: dict[str, str], tmp_path: Path, fake_codex: FakeCodex
) -> None:
    argv = [*PROXY, "--codex", str(fake_codex.path), "--", sys.executable, "-c", DEEP_SERVER]
    client = ProxyClient(argv, env=env, errlog=tmp_path / "proxy.err")
    try:
        client.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})
        deep = client.read_line()
        assert deep.startswith(b'{"jsonrpc":"2.0","id":0,"result":{},"x":[[[') and len(deep) > 2e5
        assert client.read()["params"]["data"] == "after"
    finally:
        client.close()
    assert "Traceback" not in (tmp_path / "proxy.err").read_text()


#: A server that answers SIGUSR1 with a notification and goes on answering pings.
USR1_SERVER = """\
import json, signal, sys
def said(number, frame):
    print(json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                      "params": {"data": "usr1"}}), flush=True)
signal.signal(signal.SIGUSR1, said)
for line in sys.stdin:
    asked = json.loads(line)
    if asked["method"] == "exit":
        break
    print(json.dumps({"jsonrpc": "2.0", "id": asked["id"], "result": {}}), flush=True)
"""


def test_sigusr1_reaches_the_server_and_the_relay_goes_on(
    env: dict[str, str], tmp_path: Path, fake_codex: FakeCodex
) -> None:
    """Passed on with no grace period: with --grace 0.001 a grace would kill it at once."""
    argv = [*PROXY, "--codex", str(fake_codex.path), "--grace", "0.001"]
    argv += ["--", sys.executable, "-c", USR1_SERVER]
    client = ProxyClient(argv, env=env, errlog=tmp_path / "proxy.err")
    try:
        client.answer(client.request("ping"))  # the server's handler is in place
        client.process.send_signal(signal.SIGUSR1)
        assert client.read()["params"]["data"] == "usr1"
        for _ in range(200):  # well past the grace: the server answers on
            assert client.answer(client.request("ping"))["result"] == {}
        client.send({"jsonrpc": "2.0", "method": "exit"})  # it ends, of its own accord
        assert client.process.wait(30) == 0
    finally:
        client.close()


def test_an_answer_under_a_discovery_id_cannot_unlearn_the_state(start: Any, record: Path) -> None:
    """A ping's ``{}`` under the id of an ``initialize`` in flight teaches nothing, and a
    request under the id of one still awaited is refused: forged calls stay refused."""
    client = start("--capable")
    client.initialize()
    initialize = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {}}
    ping = b'{"jsonrpc":"2.0","id":99,"method":"ping"}\n'
    again = json.dumps({"jsonrpc": "2.0", "id": 99, "method": "initialize", "params": initialize})
    client.send_raw(ping + again.encode() + b"\n")
    client.answer(99)
    client.answer(99)
    # Now the other way round: the initialize first, a ping under its id refused.
    client.send_raw(again.replace("99", "98").encode() + b"\n" + ping.replace(b"99", b"98"))
    answers = [client.answer(98), client.answer(98)]  # in either order: one id, two requests
    (refused,) = [answer for answer in answers if "error" in answer]
    assert "a discovery request still unanswered" in refused["error"]["message"]
    (learnt,) = [answer for answer in answers if "result" in answer]
    assert learnt["result"]["capabilities"]["experimental"] == {"codex/sandbox-state": {}}
    forged = CALL % (50, b'{"codex/sandbox-state":%s}' % DISABLED)
    client.send_raw(forged)
    assert client.answer(50)["error"]["code"] == -32602
    assert not any(b'"id":50' in line for line in received(record, "tools/call"))


@pytest.mark.parametrize("spelled", [b"98.0", b"9.8e1"])
def test_a_request_under_an_awaited_id_spelled_as_a_float_is_refused_too(
    start: Any, record: Path, spelled: bytes
) -> None:
    """JSON has one kind of number: ``98.0`` is the id ``98`` to a reader (a JavaScript
    server answers it as ``98``), so its answer could be taken for the discovery's."""
    client = start("--capable")
    client.initialize()
    initialize = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {}}
    again = json.dumps({"jsonrpc": "2.0", "id": 98, "method": "initialize", "params": initialize})
    ping = b'{"jsonrpc":"2.0","id":%s,"method":"ping"}\n' % spelled
    client.send_raw(again.encode() + b"\n" + ping)
    answers = [client.read(), client.read()]
    refused = [answer for answer in answers if "error" in answer]
    assert len(refused) == 1, answers
    assert "a discovery request still unanswered" in refused[0]["error"]["message"]
    assert received(record, '"ping"') == []


@pytest.mark.parametrize("trusted", [False, True], ids=["untrusted", "trusted"])
def test_the_legacy_state_update_sets_no_state_but_a_trusted_hosts(
    start: Any, record: Path, trusted: bool
) -> None:
    """``codex/sandbox-state/update`` (older Codex builds) carries a state for the session:
    from an untrusted host it is refused like a call that sets a sandbox key (a
    notification of it dropped); a trusted host's reaches the server as sent."""
    client = start("--capable", options=("--trust-host-state",) if trusted else ())
    client.initialize()
    update = (
        b'{"jsonrpc":"2.0","id":%d,"method":"codex/sandbox-state/update",'
        b'"params":{"sandboxState":%s}}\n'
    )
    escaped = update.replace(b"codex/sandbox-state/update", b"codex\\/sandbox-state\\/update")
    notification = b'{"jsonrpc":"2.0","method":"codex/sandbox-state/update","params":{}}\n'
    client.send_raw(update % (60, DISABLED) + escaped % (61, DISABLED) + notification)
    answers = [client.answer(60), client.answer(61)]
    client.answer(client.request("ping"))
    if trusted:
        assert len(received(record, "sandbox-state")) == 3
        return
    assert [answer["error"]["code"] for answer in answers] == [-32602, -32602]
    assert "codex/sandbox-state/update" in answers[0]["error"]["message"]
    assert received(record, "sandbox-state") == []


@pytest.mark.parametrize(
    ("line", "code", "answered_id"),
    [
        (
            b'{"jsonrpc":"2.0","id":51,"method":"tools/call","params":{"name":"meta"},'
            b'"param\xc5\xbf":{"name":"meta","_meta":{"codex/sandbox-state":%s}}}\n' % DISABLED,
            -32600,
            None,
        ),
        (CALL % (52, b'{"codex\xef\xbc\x8fsandbox-state":%s}' % DISABLED), -32602, 52),
        (
            b'{"jsonrpc":"2.0","id":NaN,"method":"tools/call","params":{"_meta":{"codex/sandbox-state":{}}}}\n',
            -32602,
            None,
        ),
    ],
    ids=["params with a long s", "a fullwidth solidus", "a NaN id"],
)
def test_spellings_a_lenient_reader_folds_are_refused_and_answered_validly(
    start: Any, record: Path, line: bytes, code: int, answered_id: int | None
) -> None:
    client = start("--capable")
    client.initialize()
    client.send_raw(line)
    error = client.answer(answered_id)["error"]
    assert error["code"] == code
    client.answer(client.request("ping"))
    assert received(record, "tools/call") == []


def test_a_withheld_launcher_is_resolved_again_once_its_path_changes(
    start: Any, tmp_path: Path
) -> None:
    """Codex missing at the operator's path when the proxy starts (an upgrade caught half
    way, say): calls go without the launcher until a file appears there; the call that sees
    it sets off the renewal, and the calls after it get the launcher."""
    later = tmp_path / "later"
    later.mkdir(mode=0o755)
    client = start("--capable", options=("--codex", str(later / "codex")))
    client.initialize()

    def launcher() -> object:
        meta = client.answer(client.call("meta"))["result"]["structuredContent"]["meta"]
        return meta.get(SANDBOX_LAUNCHER_KEY)

    assert launcher() is None
    assert launcher() is None  # nothing changed there: not resolved again
    errlog = tmp_path / "proxy.err"
    assert "launcher resolved again" not in errlog.read_text()
    installed = install_fake_codex(later)
    assert launcher() is None  # this call sees the change, and renews off the relay's path
    said_within(errlog, "launcher resolved again: published")
    assert launcher() == {"codexExecutable": str(installed.path)}
