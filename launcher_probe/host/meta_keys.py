"""Which ``_meta`` keys a caller may not set: the reserved keys and their look-alikes.

A server (or a proxy in between) that trims, drops control characters or ignores case
would read ``"Codex/Sandbox-Launcher "`` or ``"codex/sandbox-launcher\\u0000"`` as the
reserved key itself, so a caller key is compared by its ``key_form``, not byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from launcher_probe.contract import (
    CODEX_APPS_OBJECT_KEY,
    CODEX_APPS_RESERVED_KEYS,
    CODEX_APPS_RESERVED_NESTED_KEY,
    HOST_OWNED_KEYS,
)


def key_form(key: str) -> str:
    """``key`` as a lenient reader could take it: case folded, every whitespace and every
    other non-printable character (control, format, line separators) dropped. No reserved
    key holds any of them, so this only widens what counts as one."""
    if not key.isprintable():
        key = "".join(char for char in key if char.isprintable())
    return "".join(key.split()).casefold()


_APPS_OBJECT_FORM = key_form(CODEX_APPS_OBJECT_KEY)
_APPS_NESTED_FORM = key_form(CODEX_APPS_RESERVED_NESTED_KEY)


def _is_form(key: object, form: str) -> bool:
    return isinstance(key, str) and key_form(key) == form


class ReservedKeys:
    """The reserved keys of one request, matched by ``key_form``."""

    def __init__(self, keys: Iterable[str], *, apps: bool) -> None:
        names = [*HOST_OWNED_KEYS, *keys, *(CODEX_APPS_RESERVED_KEYS if apps else ())]
        self._by_form = {key_form(name): name for name in names}
        self._apps = apps

    def match(self, key: str) -> str | None:
        """The reserved key ``key`` is or looks like, or None."""
        return self._by_form.get(key_form(key))

    def set_by(self, key: str, value: Any) -> str | None:
        """The reserved key the caller entry ``key: value`` sets (dotted when nested, with the
        caller's spelling as JSON when it differs), or None."""
        reserved, spelled = self.match(key), key
        nested_object = self._apps and key_form(key) == _APPS_OBJECT_FORM
        if reserved is None and nested_object and isinstance(value, Mapping):
            inner = next((k for k in value if _is_form(k, _APPS_NESTED_FORM)), None)
            if inner is not None:
                reserved = f"{CODEX_APPS_OBJECT_KEY}.{CODEX_APPS_RESERVED_NESTED_KEY}"
                spelled = f"{key}.{inner}"
        if reserved is None or reserved == spelled:
            return reserved
        return f"{reserved} (as {json.dumps(spelled)})"
