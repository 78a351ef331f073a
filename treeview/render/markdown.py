"""Markdown to safe HTML for message text: markdown-it-py (CommonMark, tables, strikethrough), Pygments, nh3.

Raw HTML in the Markdown is not interpreted (it shows as text), images are replaced by their alt text (a
remote image would tell a third party that the page was opened), and the rendered HTML is sanitized with nh3
whatever markdown-it produced. Oversized text is cut before parsing, so the time spent stays bounded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.utils.html import format_html
from django.utils.safestring import SafeString
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from pygments import highlight as pygments_highlight
from pygments.formatters import HtmlFormatter

from treeview.render.highlight import HIGHLIGHT_MAX_CHARS, cut_text, lexer_for_language
from treeview.render.sanitize import CUT_NOTICE_CLASS, HIGHLIGHT_CLASS, IMAGE_ALT_CLASS, sanitize
from treeview.render.text import clean_text

# Text longer than this is cut before rendering (a message can be megabytes long).
MARKDOWN_MAX_CHARS = 200_000

# markdown-it tries every "[" as the start of a link label (about 12 µs each): 200,000 of them took
# 2-4 s to render (11 s on a busy machine). Past this many the text is shown as it is, without Markdown.
MARKDOWN_MAX_BRACKETS = 10_000

_FORMATTER = HtmlFormatter(nowrap=True)


def _highlight_fence(code: str, language: str, _attrs: str) -> str:
    """markdown-it's highlight hook: Pygments spans for a known fence language, else "" (plain escaping)."""
    lexer = lexer_for_language(language)
    if lexer is None or len(code) > HIGHLIGHT_MAX_CHARS:
        return ""
    spans = pygments_highlight(code, lexer, _FORMATTER)
    # Starts with <pre, so markdown-it uses it as the whole block; the document is sanitized afterwards.
    return f'<pre class="{HIGHLIGHT_CLASS}"><code>{spans}</code></pre>\n'


def _render_image(
    renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    """An image becomes its alt text: loading it would leak the page view to whoever serves the image."""
    alt = renderer.renderInlineAsText(tokens[idx].children or [], options, env)
    label = f"[image: {alt}]" if alt else "[image]"
    return f'<span class="{IMAGE_ALT_CLASS}">{escapeHtml(label)}</span>'


def _make_parser() -> MarkdownIt:
    md = MarkdownIt(
        "commonmark",
        # html off: `<script>` in a message is text, not markup. linkify off: it needs an extra dependency.
        {"html": False, "linkify": False, "typographer": False, "highlight": _highlight_fence},
    ).enable(["table", "strikethrough"])
    md.add_render_rule("image", _render_image)
    return md


_MD = _make_parser()


def _cut_notice(shown: int, total: int) -> SafeString:
    return format_html(
        '<p class="{}">… {} more characters not shown ({} in all).</p>',
        CUT_NOTICE_CLASS,
        f"{total - shown:,}",
        f"{total:,}",
    )


def _plain(text: str) -> SafeString:
    """Text shown as written (escaped, in a preformatted block), saying why it is not rendered as Markdown."""
    return format_html(
        '<p class="{}">Shown as plain text: {} square brackets are too many to read as Markdown quickly.</p>'
        "<pre><code>{}</code></pre>",
        CUT_NOTICE_CLASS,
        f"{text.count('['):,}",
        text,
    )


def render_markdown(text: Any, *, limit: int = MARKDOWN_MAX_CHARS) -> SafeString:
    """Render Markdown `text` as sanitized HTML; text beyond `limit` characters is cut, with a notice."""
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    shown, truncated = cut_text(text, limit)
    if shown.count("[") > MARKDOWN_MAX_BRACKETS:
        html = _plain(clean_text(shown))
    else:
        html = sanitize(_MD.render(clean_text(shown)))
    if not truncated:
        return html
    return format_html("{}{}", html, _cut_notice(len(shown), len(text)))
