"""The client uses a helper's launcher only with a passed verdict in this user's own
cache: a same-uid helper cannot publish what this user never verified."""

from __future__ import annotations

import json
import os
import socket
import threading

from launcher_probe.host.decision import Published
from launcher_probe.host.resolver import resolve_launcher
from tests.conftest import HostEnv, run_cli
from tests.fakes import FakeCodex
from tests.service.helper import short_directory


def test_a_helper_cannot_publish_what_this_user_never_verified(
    host_env: HostEnv, fake_codex: FakeCodex
) -> None:
    """A same-uid process answering on the helper's socket with a launcher that passes the
    path rules but has no passed verdict in the cache: `--via helper` refuses it, `auto`
    resolves locally (and probes)."""
    walked = resolve_launcher(str(fake_codex.path), use_cache=False)
    assert isinstance(walked, Published)
    claim = {**walked.to_json(), "schema": 1}
    probes = fake_codex.probe_count()  # that one, uncached
    with short_directory() as directory:
        runtime = directory / "run"
        (runtime / "launcher-probe").mkdir(parents=True, mode=0o700)
        runtime.chmod(0o700)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(runtime / "launcher-probe" / "launcher-probe.sock"))
        listener.listen()

        def answer_every_request() -> None:
            while True:
                try:
                    connection, _ = listener.accept()
                except OSError:
                    return
                with connection:
                    connection.recv(1 << 16)
                    line = {"v": 1, "ok": True, "result": claim}
                    connection.sendall(json.dumps(line).encode() + b"\n")

        threading.Thread(target=answer_every_request, daemon=True).start()
        env = {**host_env.env, "XDG_RUNTIME_DIR": str(runtime)}
        try:
            refused = run_cli(
                "resolve", "--via", "helper", "--codex", str(fake_codex.path), env=env
            )
            assert refused.returncode == 3, refused.stdout + refused.stderr
            assert "no passed verdict" in refused.stderr
            assert fake_codex.probe_count() == probes
            local = run_cli(
                "resolve", "--json", "--via", "auto", "--codex", str(fake_codex.path), env=env
            )
            assert local.returncode == 0, local.stderr
            report = json.loads(local.stdout)
            assert (report["via"], report["from_cache"]) == ("local", False)
            assert fake_codex.probe_count() == probes + 1
        finally:
            listener.close()
    assert os.path.exists(fake_codex.path)
