"""``Value``: the base of the small immutable types a warm ``resolve`` builds (and
``finite``, the one number check their parsers share).

They are ``__slots__`` classes rather than dataclasses or ``typing.NamedTuple``s because
importing ``dataclasses`` (which imports ``inspect``, ``ast``, ``dis``, ``tokenize``) or
``typing`` costs a fresh ``launcher-probe resolve`` more than all of its work. A subclass
lists its fields in ``__slots__`` and sets them in ``__init__`` with ``Value.__init__``;
it gets equality and hashing by field values, a ``repr``, ``replace`` and immutability.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any, NoReturn, Self

_INFINITY = float("inf")


def finite(number: float) -> bool:
    """``math.isfinite(number)`` (an OverflowError for an int beyond any float) without
    importing ``math``, a shared library a warm ``resolve`` would load for this alone."""
    return -_INFINITY < float(number) < _INFINITY


class Value:
    """Fields in ``__slots__``, compared in that order; assignment after ``__init__`` raises."""

    __slots__: tuple[str, ...] = ()

    def __init__(self, **fields: Any) -> None:
        for name in self.__slots__:
            object.__setattr__(self, name, fields[name])

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot set {name}")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot delete {name}")

    def fields(self) -> dict[str, Any]:
        """The field values by name, in ``__slots__`` order."""
        return {name: getattr(self, name) for name in self.__slots__}

    def _key(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes`` (``dataclasses.replace``)."""
        return type(self)(**{**self.fields(), **changes})

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, Value)
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={value!r}" for name, value in self.fields().items())
        return f"{type(self).__name__}({shown})"
