"""What the injector accepts as caller and host metadata, and which keys a caller may not set.

Both must be JSON objects within ``META_LIMITS`` (``launcher_probe.json_input``). A server
(or a proxy in between) that trims, drops control characters or ignores case would read
``"Codex/Sandbox-Launcher "`` or ``"codex/sandbox-launcher\\u0000"`` as the reserved key
itself, so a caller key is compared with the reserved ones by its ``key_form``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from launcher_probe.contract import (
    CODEX_APPS_OBJECT_KEY,
    CODEX_APPS_RESERVED_KEYS,
    CODEX_APPS_RESERVED_NESTED_KEY,
    HOST_OWNED_KEYS,
    SANDBOX_KEYS,
)
from launcher_probe.errors import InputRejected
from launcher_probe.json_input import META_LIMITS, InvalidJSON, NonStringKey, checked_size

#: The MCP progress token: set by the host after every other key.
PROGRESS_TOKEN_KEY = "progressToken"  # noqa: S105  (a _meta key, not a secret)


class MetaRejected(InputRejected):
    """Request metadata was rejected; nothing is sent (fail closed)."""

    reason = "meta_rejected"


def key_form(key: str) -> str:
    """``key`` as a lenient reader could take it: compatibility-normalised (NFKC: a
    fullwidth solidus U+FF0F is ``/``), case folded, every whitespace and every other non-printable
    character (control, format, line separators) dropped. No reserved key holds any of
    them, so this only widens what counts as one."""
    if type(key) is str and len(key) <= _REMEMBERED_LENGTH:  # not a subclass, which could
        return _remembered_form(key)  # pass for a key already seen; nor a huge key to keep
    return _form(key)


def _form(key: str) -> str:
    if key.isascii() and key.isprintable():  # the usual key: only a space can go
        return key.replace(" ", "").lower()
    import unicodedata  # a key beyond ASCII only

    if not key.isprintable():
        key = "".join(char for char in key if char.isprintable())
    return "".join(unicodedata.normalize("NFKC", key).split()).casefold()


#: ``_form`` of the keys seen lately: a turn's calls repeat theirs (bounded for any keys:
#: 1024 of them, each of at most ``_REMEMBERED_LENGTH`` characters).
_remembered_form = functools.lru_cache(maxsize=1024)(_form)
_REMEMBERED_LENGTH = 256


_APPS_OBJECT_FORM = key_form(CODEX_APPS_OBJECT_KEY)
_APPS_NESTED_FORM = key_form(CODEX_APPS_RESERVED_NESTED_KEY)
_HOST_OWNED_FORMS = {key_form(name): name for name in HOST_OWNED_KEYS}
_APPS_FORMS = {key_form(name): name for name in CODEX_APPS_RESERVED_KEYS}
#: The sandbox keys, by form.
_SANDBOX_FORMS = {key_form(key): key for key in SANDBOX_KEYS}
#: The keys only the injector sets, by form.
_INJECTED_FORMS = {**_SANDBOX_FORMS, key_form(PROGRESS_TOKEN_KEY): PROGRESS_TOKEN_KEY}


def _named(reserved: str, spelled: str) -> str:
    """``reserved``, with the spelling that set it as JSON when it differs."""
    return reserved if reserved == spelled else f"{reserved} (as {json.dumps(spelled)})"


def sandbox_key_set(keys: Iterable[str]) -> str | None:
    """The sandbox key (state, its ``-meta`` copy, the launcher) that the first of ``keys``
    of its form sets, named as ``ReservedKeys.set_by`` names one; None when none does."""
    for key in keys:
        reserved = _SANDBOX_FORMS.get(key_form(key))
        if reserved is not None:
            return _named(reserved, key)
    return None


def _is_form(key: object, form: str) -> bool:
    return isinstance(key, str) and key_form(key) == form


class ReservedKeys:
    """The reserved keys of one request, matched by ``key_form``."""

    def __init__(self, keys: Iterable[str], *, apps: bool) -> None:
        by_form = dict(_HOST_OWNED_FORMS)
        for name in keys:
            by_form[key_form(name)] = name
        if apps:
            by_form.update(_APPS_FORMS)
        self._by_form = by_form
        self._apps = apps
        #: The forms ``set_by`` can name something for.
        self._watched = frozenset(by_form) | ({_APPS_OBJECT_FORM} if apps else set())

    def first_set(self, caller: Mapping[str, Any]) -> str | None:
        """What ``set_by`` names for the first of the ``caller`` entries that sets a reserved
        key, or None."""
        if self._watched.isdisjoint(map(key_form, caller)):
            return None  # only usual keys: told apart by their forms alone
        for key, value in caller.items():
            named = self.set_by(key, value)
            if named is not None:
                return named
        return None

    def set_by(self, key: str, value: Any) -> str | None:
        """The reserved key the caller entry ``key: value`` sets (dotted when nested, with the
        caller's spelling as JSON when it differs), or None."""
        form = key_form(key)
        reserved, spelled = self._by_form.get(form), key
        if reserved is None and not self._apps:
            return None  # the usual key
        if reserved is None and form == _APPS_OBJECT_FORM and isinstance(value, Mapping):
            inner = next((k for k in value if _is_form(k, _APPS_NESTED_FORM)), None)
            if inner is not None:
                reserved = f"{CODEX_APPS_OBJECT_KEY}.{CODEX_APPS_RESERVED_NESTED_KEY}"
                spelled = f"{key}.{inner}"
        return None if reserved is None else _named(reserved, spelled)


def caller_object(caller_meta: object) -> tuple[dict[str, Any], int]:
    """The caller's ``_meta`` (``None`` is ``{}``) as a new dict, and its size as compact
    JSON; MetaRejected when it is no JSON object within ``META_LIMITS``, naming the first
    fault the walk of that copy meets (the caller's object is read once, by the copy)."""
    if caller_meta is None:
        return {}, 0
    if type(caller_meta) is not dict and not isinstance(caller_meta, Mapping):
        raise MetaRejected(f"invalid type: {_json_kind(caller_meta)}, expected a map")
    return _json_object(caller_meta, "caller metadata", name_key=_caller_key_fault)


def _caller_key_fault(key: object) -> str:
    """A caller key that is no string, at any depth, worded as Codex words a wrong type
    (JSON text cannot hold one: only a Python caller can pass it)."""
    return f"invalid type: {_json_kind(key)} key, expected a string"


def host_object(host_meta: object) -> tuple[dict[str, Any], int]:
    """The host's keys as a new dict, and their size; MetaRejected when they are no JSON
    object within ``META_LIMITS`` or set (or look like) a key the injector sets."""
    if host_meta is None:
        return {}, 0
    if not isinstance(host_meta, Mapping):
        raise MetaRejected("host metadata must be a mapping")
    host, size = _json_object(host_meta, "host metadata")
    for key in host:
        named = _INJECTED_FORMS.get(key_form(key))
        if named is not None:
            raise MetaRejected(f"host metadata must not set {named}: the injector sets it")
    return host, size


class HostMeta:
    """The host's metadata of one turn, checked once (as ``host_object`` checks it) and
    reused by every call of that turn, as a ``SandboxState`` is: a copy taken when checked,
    so a later change to the mapping it came from changes nothing sent."""

    __slots__ = ("_keys", "_reserved", "size")

    def __init__(self, host_meta: Mapping[str, Any] | None) -> None:
        """MetaRejected as ``host_object`` (``None`` is ``{}``)."""
        self._keys, self.size = host_object(host_meta)
        #: ReservedKeys by ``apps`` (the codex_apps server's set, or every other's).
        self._reserved: dict[bool, ReservedKeys] = {}

    @property
    def keys(self) -> Mapping[str, Any]:
        """The host's keys, in order (read only: the injector copies them into ``_meta``)."""
        return self._keys

    def reserved(self, *, apps: bool) -> ReservedKeys:
        """The keys a caller may not set beside these, made on first use."""
        found = self._reserved.get(apps)
        if found is None:
            found = self._reserved[apps] = ReservedKeys(self._keys, apps=apps)
        return found


def _json_object(
    value: Mapping[str, Any], what: str, *, name_key: Callable[[object], str] | None = None
) -> tuple[dict[str, Any], int]:
    """A copy of ``value`` and its size, checked in one walk of the copy; MetaRejected with
    the first fault the walk met (a key that is no string in ``name_key``'s words, if
    given)."""
    copy = dict(value)
    try:
        return copy, checked_size(copy, what, META_LIMITS)
    except NonStringKey as error:
        raise MetaRejected(str(error) if name_key is None else name_key(error.key)) from error
    except InvalidJSON as error:
        raise MetaRejected(str(error)) from error


def _json_kind(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "sequence"
    return type(value).__name__
