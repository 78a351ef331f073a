"""Syntax highlighting with Pygments, chosen by a declared language or a file name only.

The lexer is never guessed from the content: guessing is slow on large inputs and lets hostile content pick
the lexer. Output is sanitized like every other generated fragment, and oversized code is cut before
highlighting so that the time spent stays bounded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django.utils.html import format_html
from django.utils.safestring import SafeString
from pygments import highlight as pygments_highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
from pygments.util import ClassNotFound

from treeview.render.sanitize import HIGHLIGHT_CLASS, sanitize
from treeview.render.text import clean_text

# Above this many characters code is cut (and the cut reported): Pygments is linear but not fast.
HIGHLIGHT_MAX_CHARS = 100_000

# A fence language longer than this is not a language name.
_MAX_LANGUAGE_LENGTH = 40

_FORMATTER = HtmlFormatter(nowrap=True)


@dataclass(frozen=True, slots=True)
class Highlighted:
    """Highlighted (or plainly escaped) code: `html` is a complete `<pre>` element."""

    html: SafeString
    language: str | None  # the lexer's name when one was found
    truncated: bool
    full_length: int


@lru_cache(maxsize=512)
def _lexer_by_name(name: str) -> Lexer | None:
    # Cached: a miss makes Pygments scan its plugin entry points, and a session repeats the same fence names.
    try:
        return get_lexer_by_name(name, stripnl=False, ensurenl=True)
    except ClassNotFound:
        return None


@lru_cache(maxsize=1024)
def _lexer_by_file_name(name: str) -> Lexer | None:
    # Without `code`, Pygments picks among matching lexers by their declared priority, never by content.
    try:
        return get_lexer_for_filename(name, stripnl=False, ensurenl=True)
    except ClassNotFound:
        return None


def lexer_for_language(language: str | None) -> Lexer | None:
    """The Pygments lexer for a Markdown fence language or alias (`py`, `TypeScript`), or None."""
    if not language:
        return None
    name = language.strip().lower()
    if not name or len(name) > _MAX_LANGUAGE_LENGTH or not name.isprintable():
        return None
    return _lexer_by_name(name)


def lexer_for_filename(path: str | None) -> Lexer | None:
    """The Pygments lexer for a file path, judged by its name (extension or well-known name) only."""
    if not path:
        return None
    name = path.replace("\\", "/").rsplit("/", 1)[-1].strip()
    if not name or len(name) > 255 or not name.isprintable():
        return None
    # The base name only: `Makefile` and `CMakeLists.txt` are matched whole, everything else by its extension.
    return _lexer_by_file_name(name)


def cut_text(text: str, limit: int) -> tuple[str, bool]:
    """`text` cut to at most `limit` characters, at a line end when one is near; and whether it was cut."""
    if len(text) <= limit:
        return text, False
    head = text[:limit]
    newline = head.rfind("\n")
    if newline >= limit - 2_000:
        head = head[: newline + 1]
    return head, True


def plain_code_html(code: str) -> SafeString:
    """Escaped code in the same `<pre><code>` frame as highlighted code."""
    return format_html("<pre><code>{}</code></pre>", clean_text(code))


def highlight_with(code: str, lexer: Lexer | None, *, limit: int = HIGHLIGHT_MAX_CHARS) -> Highlighted:
    """Highlight `code` with `lexer` (escaped plain text when None), cut to `limit` characters."""
    shown, truncated = cut_text(code, limit)
    shown = clean_text(shown)
    if lexer is None:
        return Highlighted(plain_code_html(shown), None, truncated, len(code))
    spans = pygments_highlight(shown, lexer, _FORMATTER)
    html = sanitize(f'<pre class="{HIGHLIGHT_CLASS}"><code>{spans}</code></pre>')
    return Highlighted(html, str(lexer.name), truncated, len(code))


def highlight_code(
    code: str, *, language: str | None = None, filename: str | None = None, limit: int = HIGHLIGHT_MAX_CHARS
) -> Highlighted:
    """Highlight `code` by a language name, else by a file name; escaped plain text when neither is known."""
    lexer = lexer_for_language(language) or lexer_for_filename(filename)
    return highlight_with(code, lexer, limit=limit)


def pretty_json(value: Any) -> str:
    """Indented JSON for display (non-JSON values, which parsed entries never hold, become strings)."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def highlight_json(value: Any, *, limit: int = HIGHLIGHT_MAX_CHARS) -> Highlighted:
    """A JSON value pretty-printed and highlighted."""
    return highlight_with(pretty_json(value), lexer_for_language("json"), limit=limit)


def highlight_css(style: str = "default", selector: str = f".{HIGHLIGHT_CLASS}") -> str:
    """CSS rules for highlighted code under `selector` (for a static stylesheet: the CSP forbids inline)."""
    return str(HtmlFormatter(style=style).get_style_defs(selector))
