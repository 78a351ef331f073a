"""JavaScript's ``undefined``: ``UNDEFINED``, a value whose property is left out when serialized."""

from __future__ import annotations

from typing import Any


class _Undefined:
    """JavaScript's ``undefined``: a property holding it is left out when an entry is serialized."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNDEFINED"

    def __bool__(self) -> bool:
        return False


UNDEFINED: Any = _Undefined()
