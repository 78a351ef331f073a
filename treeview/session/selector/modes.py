"""Filter modes: the five views of the tree, their cycle order and tags, and the entry types they hide."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal, cast, get_args

FilterMode = Literal["default", "no-tools", "user-only", "labeled-only", "all"]
#: Cycle order of Ctrl+O (Shift+Ctrl+O goes backwards).
FILTER_MODES: Final[tuple[FilterMode, ...]] = get_args(FilterMode)

_FILTER_TAGS: Final[Mapping[str, str]] = {
    "default": "",
    "no-tools": " [no-tools]",
    "user-only": " [user]",
    "labeled-only": " [labeled]",
    "all": " [all]",
}
# Bookkeeping entries the default and no-tools views hide, by agent (v15's list; oh-my-pi 18 and pi 1.6 more).
_SETTINGS_TYPES: Final = frozenset({"label", "custom", "model_change", "thinking_level_change"})
_HIDDEN_TYPES: Final[Mapping[str, frozenset[str]]] = {
    "omp15": _SETTINGS_TYPES,
    "omp": _SETTINGS_TYPES
    | {
        "model_usage",
        "service_tier_change",
        "title_change",
        "credential_pin",
        "session_init",
        "ttsr_injection",
        "mode_change",
        "reset_boundary",
    },
    "pi": _SETTINGS_TYPES | {"context_edit", "session_info"},
}


def _check_mode(mode: str) -> FilterMode:
    if mode not in _FILTER_TAGS:
        raise ValueError(f"unknown tree filter mode {mode!r} (expected one of {', '.join(FILTER_MODES)})")
    return cast(FilterMode, mode)


def next_filter_mode(mode: FilterMode, backwards: bool = False) -> FilterMode:
    """The next mode of the Ctrl+O cycle (``default → no-tools → user-only → labeled-only → all``)."""
    index = FILTER_MODES.index(_check_mode(mode))
    return FILTER_MODES[(index + (-1 if backwards else 1)) % len(FILTER_MODES)]


def filter_tag(mode: FilterMode) -> str:
    """The footer tag of a mode: ``""``, ``" [no-tools]"``, ``" [user]"``, ``" [labeled]"``, ``" [all]"``."""
    return _FILTER_TAGS[_check_mode(mode)]
