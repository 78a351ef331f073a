"""JavaScript value semantics the original's code relies on.

The original builds its texts with template literals, ``||``, ``??``, ``String()``, ``Array.join``,
``trim()``, ``toFixed()`` and UTF-16 string lengths, and sorts with ``Array.prototype.sort``. Python's
nearest equivalents differ on odd inputs (``str(None)``, ``str.strip()``'s white-space set, code-point
lengths), so every module that must reproduce the original's bytes uses these helpers instead.

JavaScript ``undefined`` is :data:`treeview.session.jsonl.UNDEFINED` (an absent key reads as it:
``mapping.get(key, UNDEFINED)``); numbers print with :func:`treeview.session.jsonl.format_number`.

Pure Python, no Django.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from decimal import ROUND_HALF_UP, Context, Decimal
from typing import Any, Final

from treeview.session.jsonl import UNDEFINED, dumps, format_number

__all__ = [
    "RE_DOT",
    "RE_SPACE",
    "RE_SPACE_CHARS",
    "WHITESPACE",
    "get",
    "greater_or_equal",
    "is_nullish",
    "is_number",
    "is_undefined",
    "join",
    "number_to_string",
    "sort_strings",
    "stringify",
    "to_fixed",
    "to_number",
    "to_string",
    "trim",
    "trim_end",
    "trim_start",
    "truthy",
    "utf16_len",
    "utf16_slice",
]

# ---------------------------------------------------------------------------------------------------------
# White space and regular expressions
# ---------------------------------------------------------------------------------------------------------

#: What ``String.prototype.trim`` and the regex class ``\s`` treat as white space: the ECMAScript
#: WhiteSpace + LineTerminator set. Python's ``str.isspace`` differs (it adds \x1c-\x1f and \x85 and
#: lacks \ufeff), so ``str.strip()`` and Python's ``\s`` are not used where parity matters.
WHITESPACE: Final[str] = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
#: :data:`WHITESPACE` escaped for use inside a regex character class (``[-:{RE_SPACE_CHARS}]``).
RE_SPACE_CHARS: Final[str] = re.escape(WHITESPACE)
#: JavaScript's regex ``\s``.
RE_SPACE: Final[str] = f"[{RE_SPACE_CHARS}]"
#: JavaScript's regex ``.`` (without the ``s`` flag): anything but the four line terminators.
RE_DOT: Final[str] = "[^\n\r\u2028\u2029]"


def trim(text: str) -> str:
    """``text.trim()``."""
    return text.strip(WHITESPACE)


def trim_start(text: str) -> str:
    """``text.trimStart()``."""
    return text.lstrip(WHITESPACE)


def trim_end(text: str) -> str:
    """``text.trimEnd()``."""
    return text.rstrip(WHITESPACE)


# ---------------------------------------------------------------------------------------------------------
# undefined, null and truthiness
# ---------------------------------------------------------------------------------------------------------


def is_undefined(value: Any) -> bool:
    """``value === undefined``."""
    return value is UNDEFINED


def is_nullish(value: Any) -> bool:
    """``value == null`` (what ``??`` and ``?.`` test): null or undefined."""
    return value is None or value is UNDEFINED


def truthy(value: Any) -> bool:
    """JavaScript truthiness (what ``||``, ``&&`` and ``if`` test): objects and arrays are truthy even
    when empty; ``0``, ``NaN``, ``""``, ``false``, null and undefined are falsy."""
    if is_nullish(value) or value is False:
        return False
    if isinstance(value, bool):
        return True
    if isinstance(value, int | float):
        return value == value and value != 0  # NaN and ±0 are falsy
    if isinstance(value, str):
        return value != ""
    return True


def get(obj: Any, key: str) -> Any:
    """``obj?.[key]`` on plain data: the property, or UNDEFINED when ``obj`` is no object or lacks it."""
    if isinstance(obj, Mapping):
        return obj.get(key, UNDEFINED)
    return UNDEFINED


# ---------------------------------------------------------------------------------------------------------
# Numbers
# ---------------------------------------------------------------------------------------------------------


def is_number(value: Any) -> bool:
    """``typeof value === "number"`` (Python's ``bool`` is an ``int`` but a JavaScript boolean)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def number_to_string(value: float) -> str:
    """``Number.prototype.toString()``: ``format_number`` plus the non-finite spellings JSON lacks."""
    if isinstance(value, float) and not math.isfinite(value):
        if math.isnan(value):
            return "NaN"
        return "Infinity" if value > 0 else "-Infinity"
    return format_number(value)


def to_number(value: Any) -> float:
    """``Number(value)`` for the values that reach arithmetic and comparisons in the original.

    Numbers, booleans, null and strings (JS-trimmed, empty gives 0, Python's ``float`` syntax otherwise);
    anything else (undefined, objects, arrays) is NaN.
    """
    if is_number(value):
        return float(value)
    if value is None or value is False:
        return 0.0
    if value is True:
        return 1.0
    if isinstance(value, str):
        stripped = trim(value)
        if stripped == "":
            return 0.0
        try:
            return float(stripped)
        except ValueError:
            return math.nan
    return math.nan


def to_fixed(value: float, digits: int) -> str:
    """``value.toFixed(digits)``: rounds the exact binary value, ties away from zero; ``1e21`` and
    beyond (and non-finite values) print as ``toString()`` does."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value) or abs(value) >= 1e21:
        return number_to_string(value)
    # toFixed formats |value| and prefixes "-" only when value < 0 (so -0 prints without a sign).
    sign = "-" if value < 0 else ""
    exact = Decimal(abs(value))
    # Enough precision for the 21 integer digits plus the fraction, so quantize never overflows.
    context = Context(prec=25 + digits)
    return sign + str(exact.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP, context=context))


def greater_or_equal(left: Any, right: Any) -> bool:
    """``left >= right``: two strings compare by UTF-16 code units, anything else by :func:`to_number`
    (NaN compares false). Objects, which JavaScript would first turn into strings, count as NaN."""
    if isinstance(left, str) and isinstance(right, str):
        return _utf16_key(left) >= _utf16_key(right)
    return to_number(left) >= to_number(right)


# ---------------------------------------------------------------------------------------------------------
# Strings
# ---------------------------------------------------------------------------------------------------------


def to_string(value: Any) -> str:
    """``String(value)``, i.e. what a template literal interpolates.

    ``undefined``, ``null``, ``true``/``false``, numbers as JavaScript prints them, arrays joined with
    ``","``, and ``"[object Object]"`` for objects.
    """
    if isinstance(value, str):
        return value
    if value is UNDEFINED:
        return "undefined"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return number_to_string(value)
    if isinstance(value, list | tuple):
        return join(value, ",")
    if isinstance(value, Mapping):
        return "[object Object]"
    return str(value)


def join(items: Sequence[Any], separator: str) -> str:
    """``items.join(separator)``: null and undefined elements become empty strings."""
    return separator.join("" if is_nullish(item) else to_string(item) for item in items)


def stringify(value: Any) -> str:
    """``JSON.stringify(value)``, byte-exact (:func:`treeview.session.jsonl.dumps`)."""
    return dumps(value)


def utf16_len(text: str) -> int:
    """``text.length``: UTF-16 code units, so a character beyond the BMP (an emoji) counts 2."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def utf16_slice(text: str, end: int, *, keep_lone_surrogate: bool = False) -> str:
    """``text.slice(0, end)`` counted in UTF-16 code units.

    Where ``end`` falls inside a surrogate pair JavaScript keeps the lone high surrogate, which cannot
    be encoded as UTF-8. By default the half character is dropped, so the result is always encodable
    (right for text that is displayed); ``keep_lone_surrogate=True`` keeps it exactly as JavaScript does
    (right for text that is serialized with ``JSON.stringify``, which escapes it as ``\\ud83d``).
    """
    if text.isascii() or len(text) * 2 <= end:
        return text[:end]
    prefix = text[:end]
    if not prefix or max(prefix) <= "\uffff":
        # No astral character in the first `end` code points: they are exactly `end` code units.
        return prefix
    if keep_lone_surrogate:
        return text.encode("utf-16-le", "surrogatepass")[: end * 2].decode("utf-16-le", "surrogatepass")
    units = 0
    for index, char in enumerate(text):
        units += 2 if ord(char) > 0xFFFF else 1
        if units > end:
            return text[:index]
    return text


def _utf16_key(text: str) -> bytes:
    # Big-endian UTF-16 bytes compare like the code units JavaScript compares (the BMP above the
    # surrogates sorts after astral characters, unlike code-point order).
    return text.encode("utf-16-be", "surrogatepass")


def sort_strings(items: Iterable[str]) -> list[str]:
    """``Array.prototype.sort()`` on strings: ascending by UTF-16 code units (stable)."""
    return sorted(items, key=_utf16_key)
