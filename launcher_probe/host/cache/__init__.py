"""The cache stage: the policy (``policy.py``: lookups, freshness, the entry lock), the
record (``record.py``), its storage on disk (``store.py``), the in-process memory front
(``memory.py``), where the cache lives for this host (``location.py``) and the per-entry
lock (``entry_lock.py``, imported on a miss only)."""

from launcher_probe.host.cache.record import Lifetimes as Lifetimes

__all__ = ["Lifetimes"]
