"""``dumps``: the exact bytes ``JSON.stringify`` writes (JS numbers, JS string escapes, key order)."""

from __future__ import annotations

import math
import re
from json.encoder import encode_basestring
from typing import Any

from treeview.session.jsonl.undefined import UNDEFINED

# Integers beyond 2**53 are not exact in JavaScript; JSON.stringify prints the nearest double.
_MAX_SAFE_INT = 2**53
_SURROGATE = re.compile("[\ud800-\udfff]")


def format_number(value: float) -> str:
    """Format a number as JavaScript's ``Number.prototype.toString`` (and so ``JSON.stringify``) does."""
    if isinstance(value, int):
        if -_MAX_SAFE_INT <= value <= _MAX_SAFE_INT:
            return str(value)
        try:
            value = float(value)
        except OverflowError:
            return "null"
    if not math.isfinite(value):
        return "null"
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    # repr() gives the shortest round-trip digits, as ECMAScript's algorithm does; only the layout differs.
    text = repr(abs(value))
    mantissa, _, exp_text = text.partition("e")
    int_part, _, frac_part = mantissa.partition(".")
    if frac_part == "0":
        frac_part = ""
    digits = (int_part + frac_part).lstrip("0")
    # Position of the decimal point relative to the first significant digit (ECMAScript's "n").
    point = len(int_part) + (int(exp_text) if exp_text else 0)
    if int_part == "0":
        stripped = frac_part.lstrip("0")
        point = -(len(frac_part) - len(stripped)) + (int(exp_text) if exp_text else 0)
        digits = stripped
    digits = digits.rstrip("0") or "0"
    k = len(digits)
    if k <= point <= 21:
        body = digits + "0" * (point - k)
    elif 0 < point <= 21:
        body = digits[:point] + "." + digits[point:]
    elif -6 < point <= 0:
        body = "0." + "0" * (-point) + digits
    else:
        exponent = point - 1
        exp_sign = "+" if exponent >= 0 else "-"
        body = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + exp_sign + str(abs(exponent))
    return sign + body


def _escape(text: str) -> str:
    encoded: str = encode_basestring(text)
    if not text.isascii() and _SURROGATE.search(encoded):
        # Well-formed JSON.stringify escapes lone surrogates instead of emitting invalid UTF-8.
        encoded = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", encoded)
    return encoded


class _Text:
    """Already-serialized text on the writer's stack (separators, keys, scalars, closing brackets)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def _scalar(value: Any) -> str | None:
    """The JSON text of a scalar, or None for a container."""
    if isinstance(value, str):
        return _escape(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int | float):
        return format_number(value)
    if isinstance(value, dict | list | tuple):
        return None
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _write_deep(value: Any, out: list[str]) -> None:
    # An explicit stack instead of recursion, for values nested as deep as the parser accepts (orjson: 1,024
    # levels), which exhaust Python's stack in _write. Scalars are written where they stand; only containers
    # wait. A third slower than _write, so only used when _write runs out of stack.
    stack: list[Any] = [value]
    while stack:
        value = stack.pop()
        if type(value) is _Text:
            out.append(value.text)
            continue
        text = _scalar(value)
        if text is not None:
            out.append(text)
            continue
        pending: list[Any] = []
        written: list[str] = []
        if isinstance(value, dict):
            written.append("{")
            first = True
            for key, item in value.items():
                if item is UNDEFINED or callable(item):
                    continue
                if not first:
                    written.append(",")
                first = False
                written.append(_escape(str(key)))
                written.append(":")
                text = _scalar(item)
                if text is None:
                    pending.append(_Text("".join(written)))
                    pending.append(item)
                    written.clear()
                else:
                    written.append(text)
            written.append("}")
        else:
            written.append("[")
            for index, item in enumerate(value):
                if index:
                    written.append(",")
                # Inside arrays JSON.stringify writes undefined as null.
                text = "null" if item is UNDEFINED else _scalar(item)
                if text is None:
                    pending.append(_Text("".join(written)))
                    pending.append(item)
                    written.clear()
                else:
                    written.append(text)
            written.append("]")
        pending.append(_Text("".join(written)))
        pending.reverse()
        stack.extend(pending)


def _write(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(_escape(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int | float):
        out.append(format_number(value))
    elif isinstance(value, dict):
        out.append("{")
        first = True
        for key, item in value.items():
            if item is UNDEFINED or callable(item):
                continue
            if not first:
                out.append(",")
            first = False
            out.append(_escape(str(key)))
            out.append(":")
            _write(item, out)
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            # Inside arrays JSON.stringify writes undefined as null.
            if item is UNDEFINED:
                out.append("null")
            else:
                _write(item, out)
        out.append("]")
    else:
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def dumps(value: Any) -> str:
    """Serialize ``value`` exactly as JavaScript's ``JSON.stringify(value)`` would."""
    out: list[str] = []
    try:
        _write(value, out)
    except RecursionError:
        out.clear()
        _write_deep(value, out)
    return "".join(out)
