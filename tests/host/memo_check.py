"""Resolving without an operator path through the discovery memo and without it: the
same decision (or the same refusal) every time."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from launcher_probe.errors import LauncherProbeError
from launcher_probe.host.cache import discovery_memo as memo
from launcher_probe.host.cache.memory import MEMORY
from launcher_probe.host.cache.policy import VerdictCache
from launcher_probe.host.cache.store import MEMO_SUFFIX
from launcher_probe.host.decision import Withheld
from launcher_probe.host.resolver import resolve_launcher


def memos() -> list[Path]:
    """This host's discovery memos in the default cache."""
    directory = Path(VerdictCache().directory)
    return sorted(directory.glob(f"*{MEMO_SUFFIX}")) if directory.is_dir() else []


def forget_memos() -> None:
    """Remove this host's discovery memos: the next plain resolve discovers in full."""
    for memo_file in memos():
        memo_file.unlink()


def timeless(decision: dict[str, object]) -> dict[str, object]:
    """A ``resolve --json`` decision less its times, which two equal answers need not share."""
    return {**decision, "from_cache": None, "probed_at": None}


def _outcome() -> Any:
    MEMORY.forget()  # as a fresh process: the disk answers
    try:
        return resolve_launcher().to_json()
    except LauncherProbeError as error:
        return ("raised", type(error).__name__, str(error))


def memo_agrees_with_discovery() -> bool:
    """Resolve in full (writing the memo when it may), through the memo, then in full
    again with the memo removed; the last two are asserted equal. True when there was a
    memo to replay (a published decision or a not_found writes one)."""
    forget_memos()
    _outcome()
    if not memos():
        return False  # nothing was memoised: no second route to compare
    through_memo = _outcome()
    forget_memos()
    assert through_memo == _outcome()
    assert memos(), "the full discovery wrote the memo again"
    return True


def memo_names_what_discovery_finds() -> bool:
    """In the state the caller left (whatever would be probed): the memo written from a
    full discovery, replayed at once, names discovery's first candidate, or is refused.
    True when it was written and replayed."""
    from launcher_probe.host.discovery.order import discover

    seen = memo.observed()
    try:
        found = discover()
    except LauncherProbeError:
        return False  # the config file is refused: no answer to memoise
    cache = VerdictCache()
    if seen is None or not found.candidates or os.environ.get("LAUNCHER_PROBE_CODEX"):
        return False
    cache.disk.check_directories(create=True)
    for stale in memos():
        stale.unlink()
    memo.record(cache, found, seen)
    choice = memo.replay_choice(cache)
    first = found.candidates[0]
    if choice is None:
        return False
    assert not isinstance(choice, Withheld), choice  # a candidate was found
    behind = None if first.resolved == os.path.realpath(first.path) else first.resolved
    assert choice == (str(first.source), first.path, behind)
    return True
