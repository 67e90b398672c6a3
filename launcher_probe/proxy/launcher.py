"""The launcher Decision the proxy's server was started under, and its renewal, off the
relay's path: when the binary changed, that call goes without the launcher
(``binary_changed``) and the launcher is resolved again; calls while that runs go without
it too, those after it get the new decision. A withheld launcher is resolved again once its
path changes on disk (a file appears there, or another takes its place: an upgrade that
was caught half-way, say), so that it does not stay withheld for the server's life."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

from launcher_probe.errors import LauncherProbeError
from launcher_probe.host.decision import Decision, Published
from launcher_probe.proxy.notes import Notes

#: Makes a new Decision (the same resolver, cache and helper as ``resolve``).
Resolve = Callable[[], Decision]
#: What ``lstat`` and ``stat`` say of a path: the link itself and what it leads to (None:
#: nothing there, or it cannot be looked at).
Seen = tuple[tuple[int, ...] | None, ...] | None


def _path_of(decision: Decision) -> str | None:
    """The path a decision is about: the one published, else the first one passed over."""
    if isinstance(decision, Published):
        return decision.fingerprint.path
    return decision.tried[0].path if decision.tried else None


def _look(path: str | None) -> Seen:
    return None if path is None else (_stat(os.lstat, path), _stat(os.stat, path))


def _stat(call: Callable[[str], os.stat_result], path: str) -> tuple[int, ...] | None:
    try:
        st = call(path)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino, st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class BoundLauncher:
    """The current Decision; ``renew`` replaces it in a background thread, one at a time."""

    def __init__(self, decision: Decision, resolve: Resolve) -> None:
        self.decision = decision
        self._resolve = resolve
        self._renewing = threading.Lock()
        self._renewal: threading.Thread | None = None
        self._watched = _path_of(decision)
        self._seen = _look(self._watched)

    def withheld_path_changed(self) -> bool:
        """The decision is withheld, and its path (or what it leads to) is no longer what it
        was when it was made (an ``lstat`` and a ``stat``)."""
        if isinstance(self.decision, Published) or self._watched is None:
            return False
        return _look(self._watched) != self._seen

    def renew(self, notes: Notes) -> None:
        """Resolve again unless a renewal runs already; ``notes`` tell what came of it (a
        new decision afresh: what was said of the one before may be said again)."""
        if not self._renewing.acquire(blocking=False):
            return

        def renewal() -> None:
            seen = _look(self._watched)  # before: a change while it runs is seen again
            try:
                decision = self._resolve()
            except LauncherProbeError as error:  # the old (changed) decision stays: no launcher
                self._seen = seen  # tried for this state of the path: not again until it changes
                notes.once(f"resolving the launcher again failed: {error}")
            else:
                path = _path_of(decision)
                if path is not None and path != self._watched:
                    self._watched, seen = path, _look(path)
                self._seen = seen
                self.decision = decision
                notes.afresh(f"launcher resolved again: {describe(decision)}")
            finally:
                self._renewing.release()

        self._renewal = threading.Thread(target=renewal, name="launcher-renewal", daemon=True)
        self._renewal.start()

    def settle(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for a renewal under way to end: the probe it runs
        removes its private directory as it ends, which a process that exits under it
        would leave (for a later probe's sweep)."""
        renewal = self._renewal
        if renewal is not None:
            renewal.join(timeout)


def describe(decision: Decision) -> str:
    """One line: the published path, or the reason and detail of a withheld launcher."""
    if isinstance(decision, Published):
        return f"published {decision.descriptor.codex_executable}"
    return f"withheld ({decision.reason}): {decision.detail}"
