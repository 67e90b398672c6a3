"""Install and steer the fake Codex CLI (``tests/fakes/codex.py``; its docstring lists the faults).

``install_fake_codex(directory)`` installs the fake as ``directory/codex``, a native
executable for this host (``tests/fakes/native.py``) that runs ``codex.fake.py`` beside it:
the Python fake, whose shebang is this interpreter's absolute path. With ``script=True``
the fake is that ``#!`` script itself (what discovery and the server side refuse).
``FakeCodex`` switches its fault and reads what it recorded. The ``fake_codex`` fixture
installs one into a fresh directory under ``tmp_path``.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.codex import DEFAULT_STEPS, SCRIPT_SUFFIX
from tests.fakes.native import native_launcher

SOURCE = Path(__file__).with_name("codex.py")
#: Every fault the fake knows.
FAULTS = frozenset(DEFAULT_STEPS)


@dataclass(frozen=True)
class FakeCodex:
    """One installed fake; its side files live beside ``path``. ``script`` is the Python
    file its processes run (``python script ARGS`` in their argv): ``path`` itself in the
    script form, else the ``.fake.py`` file beside the native ``path``."""

    path: Path
    script: Path

    def side_file(self, suffix: str) -> Path:
        """``<path>.<suffix>``: ``fault.json``, ``calls``, ``context``, ``pids``,
        ``daemons`` or ``replaced``."""
        return self.path.with_name(f"{self.path.name}.{suffix}")

    def set_fault(self, fault: str | None, **params: Any) -> None:
        """Switch the fault for every later invocation (``None``: behave like Codex)."""
        target = self.side_file("fault.json")
        if fault is None:
            target.unlink(missing_ok=True)
            return
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; known: {sorted(FAULTS)}")
        fd, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".fault.")
        with os.fdopen(fd, "w") as stream:
            json.dump({"fault": fault, "params": params}, stream)
        os.replace(temporary, target)

    def calls(self) -> list[list[str]]:
        """The arguments (after the program name) of every invocation so far, in order."""
        try:
            text = self.side_file("calls").read_text()
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in text.splitlines()]

    def contexts(self) -> list[dict[str, Any]]:
        """What every invocation so far was started with (``env``, ``pid``, ``ppid``,
        ``sid``, ``stdin``), in the order of ``calls()``."""
        try:
            text = self.side_file("context").read_text()
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in text.splitlines()]

    def probe_count(self) -> int:
        """How many probes started: the number of ``--version`` invocations."""
        return sum(1 for call in self.calls() if call == ["--version"])

    def grandchild_pids(self) -> list[int]:
        """Pids of the grandchildren that ``hang`` spawned."""
        try:
            text = self.side_file("pids").read_text()
        except FileNotFoundError:
            return []
        return [int(line) for line in text.splitlines()]

    def daemon_pids(self) -> list[int]:
        """Pids of the daemons that ``double_fork_daemon`` started."""
        try:
            text = self.side_file("daemons").read_text()
        except FileNotFoundError:
            return []
        return [int(line) for line in text.splitlines()]

    def replacements(self) -> int:
        """How many times ``replace_self`` replaced the file so far."""
        try:
            return len(self.side_file("replaced").read_text().splitlines())
        except FileNotFoundError:
            return 0


def install_fake_codex(directory: Path, name: str = "codex", *, script: bool = False) -> FakeCodex:
    """Install the fake as the executable ``directory/name`` (mode 0755; a new file each
    time) and return it: a native executable running ``name.fake.py`` beside it, or with
    ``script`` the ``#!`` script alone."""
    target = directory / name
    python = target if script else target.with_name(f"{name}{SCRIPT_SUFFIX}")
    _install(python, f"#!{sys.executable}\n{SOURCE.read_text()}".encode())
    if not script:
        _install(target, native_launcher().read_bytes())
    return FakeCodex(target, python)


def _install(target: Path, content: bytes) -> None:
    """Write ``content`` as the new 0755 file ``target``, atomically."""
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    with os.fdopen(fd, "wb") as stream:
        stream.write(content)
    os.chmod(temporary, 0o755)
    os.replace(temporary, target)


@pytest.fixture
def fake_codex(tmp_path: Path) -> FakeCodex:
    """A fake codex without a fault in ``tmp_path/fake-bin`` (a fresh 0755 directory)."""
    directory = tmp_path / "fake-bin"
    directory.mkdir(mode=0o755)
    directory.chmod(0o755)
    return install_fake_codex(directory)


#: Bounds a wait that should end at once (a hang guard, not a guess at a duration).
HANG_GUARD = 60.0


@contextmanager
def hanging_probe_cli(
    fake: FakeCodex, argv: list[str], env: dict[str, str], ready: Path
) -> Iterator[subprocess.Popen[str]]:
    """``launcher-probe ARGV`` running while ``fake``'s sandbox step hangs after starting a
    double-forked daemon: yields once the fake wrote to the FIFO ``ready``; the CLI is
    killed on the way out whatever happened."""
    os.mkfifo(ready)
    fifo = os.open(ready, os.O_RDONLY | os.O_NONBLOCK)
    fake.set_fault("double_fork_daemon", hang=True, step="sandbox", ready=str(ready))
    cli = subprocess.Popen(
        [sys.executable, "-m", "launcher_probe", *argv],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        readable = select.select([fifo], [], [], HANG_GUARD)[0]
        assert readable, f"the fake never got ready: {cli.poll()=}"
        assert os.read(fifo, 64) == b"ready\n"
        yield cli
    finally:
        os.close(fifo)
        cli.kill()
        cli.wait()
