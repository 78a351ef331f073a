"""A comment's body as safe HTML: the sanitized Markdown of :func:`render_markdown`, then ``@username`` chips.

The chips are added after sanitizing, to the text between tags only (never inside an attribute, a link or
code), and only for the names the comment actually mentions (users who can view the session); every other
``@name`` stays plain text. What is inserted is built here with escaping, never taken from the comment.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from html.parser import HTMLParser

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from treeview.render.markdown import render_markdown

MENTION_CLASS = "mention"
# Text inside these elements gets no chips.
_SKIP = frozenset({"a", "code", "pre"})
# The same token as services.comments.MENTION (a trailing "." ends the sentence, not the name).
_TOKEN = re.compile(r"(?<![\w@.+-])@([\w.+-]+)")


class _Chips(HTMLParser):
    """Copies sanitized HTML as it came, wrapping mentioned names in the text outside links and code."""

    def __init__(self, names: Collection[str]) -> None:
        super().__init__(convert_charrefs=False)
        self.names = names
        self.out: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.out.append(self.get_starttag_text() or "")
        if tag in _SKIP:
            self.skip += 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.out.append(self.get_starttag_text() or "")

    def handle_endtag(self, tag: str) -> None:
        self.out.append(f"</{tag}>")
        if tag in _SKIP and self.skip:
            self.skip -= 1

    def handle_data(self, data: str) -> None:
        self.out.append(data if self.skip else _TOKEN.sub(self._chip, data))

    def handle_entityref(self, name: str) -> None:
        self.out.append(f"&{name};")

    def handle_charref(self, name: str) -> None:
        self.out.append(f"&#{name};")

    def _chip(self, match: re.Match[str]) -> str:
        name = match.group(1).rstrip(".")
        if name not in self.names:
            return match.group(0)
        rest = match.group(1)[len(name) :]
        return f'<span class="{MENTION_CLASS}">@{escape(name)}</span>{rest}'


def render_comment(body: str, mentioned: Collection[str] = ()) -> SafeString:
    """``body`` (Markdown) as sanitized HTML, ``@name`` shown as a chip for each name in ``mentioned``."""
    html = render_markdown(body)
    if not mentioned or "@" not in html:
        return html
    parser = _Chips(frozenset(mentioned))
    parser.feed(str(html))
    parser.close()
    # The sanitizer's output, copied tag for tag, plus spans built above from escaped names.
    return mark_safe("".join(parser.out))
