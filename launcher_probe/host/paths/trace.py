"""A trace: how the kernel resolves some paths now, present or absent, recorded so that a
replay proves each of them would resolve the same way.

Native resolution (``host/native/``) looks at paths that need not exist (the places a
shim's platform package may be in). Each one is walked as a fingerprint's path is
(``walk.py``: every component, symlinks followed), and where a walk stops at a name that
is not there (its ``lstat`` failed) that name and the error are kept. Replaying the trace —
one ``lstat`` per component, each absent name failing again with the same error — proves
that every traced path resolves through the same inodes, unchanged, to the same end or to
the same missing name: the same ``realpath``, ``isfile`` and ``lexists`` answers, the same
bytes read. A directory's listing is not covered (a glob needs more).
"""

from __future__ import annotations

import errno
import os

from launcher_probe.host.paths.fingerprint import (
    MAX_COMPONENTS,
    component_from_json,
    first_change,
    replay_of,
)
from launcher_probe.host.paths.walk import Component, walk
from launcher_probe.value import Value

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from launcher_probe.host.paths.fingerprint import Replay


class Trace(Value):
    """The components met walking some paths (each once) and the names found absent, with
    the ``errno`` their ``lstat`` failed with."""

    __slots__ = ("components", "absent", "_replay")
    components: tuple[Component, ...]
    absent: tuple[tuple[str, int], ...]
    #: What :meth:`still_matches` compares of the components (see ``replay_of``).
    _replay: Replay

    def __init__(
        self, components: tuple[Component, ...], absent: tuple[tuple[str, int], ...]
    ) -> None:
        super().__init__(components=components, absent=absent, _replay=replay_of(components))

    def fields(self) -> dict[str, Any]:
        """The field values by name (the replay, derived from the components, left out)."""
        return {"components": self.components, "absent": self.absent}

    def _key(self) -> tuple[Any, ...]:
        return (self.components, self.absent)

    @classmethod
    def of(cls, paths: Iterable[str]) -> Trace:
        """Walk each of ``paths`` now; ValueError for one no walk can record (not
        absolute, through a procfs magic link)."""
        known: dict[str, Component] = {}
        absent: dict[str, int] = {}
        for path in paths:
            try:
                walk(path, known)
            except OSError as error:
                missing, number = error.filename, error.errno
                if number in (None, errno.EINVAL) or not isinstance(missing, str):
                    raise ValueError(f"{path!r} cannot be traced: {error.strerror}") from error
                # ELOOP, or ENOTDIR at a recorded file: the recorded components decide it.
                if number != errno.ELOOP and missing not in known:
                    absent.setdefault(missing, number)
        return cls(tuple(known.values()), tuple(absent.items()))

    def still_matches(self) -> bool:
        """True when every component is the same inode, unchanged, and every absent name
        still fails its ``lstat`` the same way."""
        if first_change(self._replay) is not None:
            return False
        for path, number in self.absent:
            try:
                os.lstat(path)
            except OSError as error:
                if error.errno == number:
                    continue
            return False
        return True

    def to_json(self) -> dict[str, Any]:
        """``{"components": [<as in a fingerprint's record>, ...], "absent": [[path,
        errno], ...]}``."""
        return {
            "components": [component.fields() for component in self.components],
            "absent": [list(item) for item in self.absent],
        }

    @classmethod
    def from_json(cls, value: Any) -> Trace:
        """Parse :meth:`to_json`'s form; ValueError (or TypeError, KeyError) on any
        deviation."""
        if not isinstance(value, dict) or set(value) != {"components", "absent"}:
            raise ValueError("a trace must be an object with components and absent")
        components, absent = value["components"], value["absent"]
        if not isinstance(components, list) or not 0 < len(components) <= MAX_COMPONENTS:
            raise ValueError("trace components must be a non-empty list")
        if not isinstance(absent, list) or len(absent) > MAX_COMPONENTS:
            raise ValueError("trace absent names must be a list")
        parsed = tuple(component_from_json(item) for item in components)
        missing = tuple(_absent(item) for item in absent)
        names = [component.path for component in parsed] + [path for path, _ in missing]
        if len(set(names)) != len(names):
            raise ValueError("a trace names a path twice")
        return cls(parsed, missing)


def _absent(value: Any) -> tuple[str, int]:
    if not isinstance(value, list) or len(value) != 2:
        raise ValueError("an absent name must be [path, errno]")
    path, number = value
    if not isinstance(path, str) or not path.startswith("/") or "\0" in path:
        raise ValueError("an absent name must be an absolute path")
    path.encode("utf-8")  # a lone surrogate is no text
    if type(number) is not int or number <= 0:
        raise ValueError("an absent name's errno must be a positive integer")
    return path, number
