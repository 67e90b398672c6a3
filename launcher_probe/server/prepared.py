"""A sandboxed command ready to run: on Linux bound to the launcher file that was verified.

``SandboxRequest.prepare`` opens the launcher (``O_PATH``) *before* its last check and
keeps the descriptor; running or executing a ``PreparedCommand`` executes that descriptor
(``/proc/self/fd/N``, ``fexecve``), never the path again, so nothing done to the path
between the check and the exec (a rename-over, a symlink retargeted) can change what
runs. ``argv[0]`` stays the launcher's path: Codex reads its own location from
``/proc/self/exe`` (the file itself), and a Codex whose file was swapped after the check
fails to start its sandbox helper rather than run the new file. Elsewhere (no ``O_PATH``)
the launcher was checked once more by path, just before, and runs by path.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, NoReturn

from launcher_probe.exec_signals import defaults_for_exec

__all__ = ["PreparedCommand"]


class PreparedCommand:
    """The argv of one command and how to execute it; a context manager that closes the
    launcher's descriptor (``close``)."""

    def __init__(self, argv: Sequence[str], launcher_fd: int | None, *, sandboxed: bool) -> None:
        #: What the process sees as its argv: ``[codexExecutable, "sandbox", ..., "--",
        #: command...]``, or the command itself under the operator's opt-out.
        self.argv = list(argv)
        #: False only under the operator's opt-out (the command runs as given, from PATH).
        self.sandboxed = sandboxed
        self._fd = launcher_fd

    @property
    def executable(self) -> str | None:
        """What to execute in a child that inherits ``pass_fds``: ``/proc/self/fd/N`` on
        Linux, the launcher's path elsewhere; None under the opt-out (PATH is searched)."""
        if self._fd is not None:
            return f"/proc/self/fd/{self._fd}"
        return self.argv[0] if self.sandboxed else None

    @property
    def pass_fds(self) -> tuple[int, ...]:
        """The descriptors a child must inherit for ``executable`` to name the launcher
        (an ``O_PATH`` descriptor: nothing can be read or written through it)."""
        return () if self._fd is None else (self._fd,)

    def popen(self, **options: Any) -> subprocess.Popen[Any]:
        """``subprocess.Popen`` of ``argv`` with ``executable`` and ``pass_fds`` set (any
        ``pass_fds`` given are added)."""
        return subprocess.Popen(self.argv, **self._options(options))

    def run(self, **options: Any) -> subprocess.CompletedProcess[Any]:
        """``subprocess.run`` of ``argv`` as ``popen`` starts it."""
        return subprocess.run(self.argv, **self._options(options))

    def exec(self, env: Mapping[str, str] | None = None) -> NoReturn:
        """Replace this process with the command (``fexecve`` of the launcher on Linux);
        OSError when it cannot be executed."""
        environment = dict(os.environ if env is None else env)
        with defaults_for_exec():
            if self._fd is not None:
                os.execve(self._fd, self.argv, environment)  # noqa: S606 (no shell, by design)
            if self.sandboxed:
                os.execve(self.argv[0], self.argv, environment)  # noqa: S606
            os.execvpe(self.argv[0], self.argv, environment)  # noqa: S606 (the opt-out: PATH)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> PreparedCommand:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _options(self, options: dict[str, Any]) -> dict[str, Any]:
        if "executable" in options:
            raise TypeError("the executable is the verified launcher's; it cannot be given")
        passed = tuple(options.pop("pass_fds", ()))
        return {**options, "executable": self.executable, "pass_fds": passed + self.pass_fds}
