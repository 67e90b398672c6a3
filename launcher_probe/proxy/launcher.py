"""The launcher Decision the proxy's server was started under, and its renewal: when the
binary changed, that call goes without the launcher (``binary_changed``) and the launcher
is resolved again, off the relay's path: calls while that runs go without it too; those
after it get the new decision."""

from __future__ import annotations

import threading
from collections.abc import Callable

from launcher_probe.errors import LauncherProbeError
from launcher_probe.host.decision import Decision

#: Makes a new Decision (the same resolver, cache and helper as ``resolve``).
Resolve = Callable[[], Decision]


class BoundLauncher:
    """The current Decision; ``renew`` replaces it in a background thread, one at a time."""

    def __init__(self, decision: Decision, resolve: Resolve) -> None:
        self.decision = decision
        self._resolve = resolve
        self._renewing = threading.Lock()

    def renew(self, report: Callable[[str], None]) -> None:
        """Resolve again unless a renewal runs already; ``report`` gets what came of it."""
        if not self._renewing.acquire(blocking=False):
            return

        def renewal() -> None:
            try:
                self.decision = self._resolve()
                report(f"launcher resolved again: {describe(self.decision)}")
            except LauncherProbeError as error:  # the old (changed) decision stays: no launcher
                report(f"resolving the launcher again failed: {error}")
            finally:
                self._renewing.release()

        threading.Thread(target=renewal, name="launcher-renewal", daemon=True).start()


def describe(decision: Decision) -> str:
    """One line: the published path, or the reason and detail of a withheld launcher."""
    from launcher_probe.host.decision import Published

    if isinstance(decision, Published):
        return f"published {decision.descriptor.codex_executable}"
    return f"withheld ({decision.reason}): {decision.detail}"
