"""View models for the pieces of a rendered entry, and the builders for message content blocks.

Conventions every template can rely on:
* a field typed `SafeString` (`html`) is finished HTML: it went through nh3 or Django's escaping here;
* every other string field is plain text and must be autoescaped by the template (never `|safe`);
* `kind` is always one of a fixed set of names, so it can be used in CSS classes and `{% if %}`.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any, Literal

from django.utils.html import format_html
from django.utils.safestring import SafeString

from treeview.render.highlight import HIGHLIGHT_MAX_CHARS, Highlighted, highlight_json, plain_code_html
from treeview.render.markdown import MARKDOWN_MAX_CHARS, render_markdown
from treeview.render.text import as_text, clean_text, format_size, utf8_size

# Long outputs show their first lines only; the rest is loaded on demand (`full_block_text`).
OUTPUT_PREVIEW_LINES = 40
OUTPUT_PREVIEW_CHARS = 8_000

# Decoded size above which an inline image is not put into the page as a data: URL.
IMAGE_MAX_BYTES = 2 * 1024 * 1024

# The only image types shown inline, by their magic bytes (the declared mimeType is not trusted).
INLINE_IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")

BLOB_IMAGE_MESSAGE = "image not available (stored in the agent's blob store)"


@dataclass(frozen=True, slots=True)
class Field:
    """One labelled value of a summary (plain text both)."""

    label: str
    value: str


@dataclass(slots=True)
class TextBlock:
    """Markdown text (`kind` "text"), reasoning ("thinking", shown collapsed) or a redacted-reasoning stub."""

    kind: Literal["text", "thinking", "redacted_thinking"]
    html: SafeString
    index: int  # position in the message content: the key for `full_block_text`
    truncated: bool = False
    full_length: int = 0


@dataclass(slots=True)
class OutputBlock:
    """Tool or command output as preformatted text, collapsed to a preview when long."""

    html: SafeString  # <pre><code> of the preview
    text: str  # the preview as plain text
    index: int
    truncated: bool
    full_length: int  # characters
    full_bytes: int
    size_label: str  # "12.3 KB", for "show all (12.3 KB)"
    shown_lines: int
    total_lines: int
    is_error: bool = False
    kind: Literal["output"] = field(default="output", init=False)


@dataclass(slots=True)
class CodeBlock:
    """Highlighted code: a command, file content, a diff, a system prompt."""

    label: str
    html: SafeString
    language: str | None
    truncated: bool
    full_length: int
    kind: Literal["code"] = field(default="code", init=False)


@dataclass(slots=True)
class JsonBlock:
    """A JSON value, pretty-printed and highlighted (shown collapsed by templates)."""

    label: str
    html: SafeString
    truncated: bool
    full_length: int
    kind: Literal["json"] = field(default="json", init=False)


@dataclass(slots=True)
class ImageBlock:
    """An image content block: inline as a data: URL, or a plain-text reason why it is not shown."""

    index: int
    mime_type: str  # as declared by the entry (plain text)
    status: Literal["inline", "blob", "unsupported", "invalid", "too_large"]
    data_url: str | None  # only for status "inline": data:<sniffed type>;base64,<validated base64>
    message: str  # what to show instead of the image ("" when inline)
    size_bytes: int | None
    kind: Literal["image"] = field(default="image", init=False)


@dataclass(slots=True)
class ToolCallBlock:
    """An assistant's tool call: a summary for known tools and the raw arguments as JSON."""

    index: int
    call_id: str
    name: str  # as the model wrote it (plain text)
    tool: str  # normalized known tool ("bash", "read", "write", "edit", "grep", "find", "ls") or ""
    summary: str  # one line: the command, the path ...
    fields: list[Field]
    code: CodeBlock | None  # the command, the written content, the edit as a diff
    arguments: JsonBlock
    intent: str | None = None
    #: oh-my-pi's ``xd://`` devices: the device a read or write went through ("" for the listing), else None.
    device: str | None = None
    kind: Literal["tool_call"] = field(default="tool_call", init=False)


@dataclass(slots=True)
class NoticeBlock:
    """A short plain-text remark inside an entry: "(no output)", "command cancelled" ..."""

    text: str
    level: Literal["info", "warning", "error"] = "info"
    kind: Literal["notice"] = field(default="notice", init=False)


Block = TextBlock | OutputBlock | CodeBlock | JsonBlock | ImageBlock | ToolCallBlock | NoticeBlock


def markdown_block(
    text: Any, index: int, kind: Literal["text", "thinking"] = "text", *, limit: int = MARKDOWN_MAX_CHARS
) -> TextBlock:
    """A Markdown text block, cut at `limit` characters."""
    source = as_text(text)
    return TextBlock(kind, render_markdown(source, limit=limit), index, len(source) > limit, len(source))


def code_block(label: str, highlighted: Highlighted) -> CodeBlock:
    """Wrap a highlighting result as a block."""
    return CodeBlock(
        label, highlighted.html, highlighted.language, highlighted.truncated, highlighted.full_length
    )


def json_block(label: str, value: Any, *, limit: int = HIGHLIGHT_MAX_CHARS) -> JsonBlock:
    """A JSON value as a highlighted block, cut at `limit` characters."""
    highlighted = highlight_json(value, limit=limit)
    return JsonBlock(label, highlighted.html, highlighted.truncated, highlighted.full_length)


def plain_block(label: str, text: Any, *, limit: int = HIGHLIGHT_MAX_CHARS) -> CodeBlock:
    """Preformatted plain text (escaped, not highlighted), cut at `limit` characters."""
    source = as_text(text)
    shown = source[:limit]
    return CodeBlock(label, plain_code_html(shown), None, len(shown) < len(source), len(source))


def _preview(text: str, max_lines: int, max_chars: int) -> str:
    """The first `max_lines` lines of `text`, at most `max_chars` characters (without splitting it all)."""
    end = -1
    for _ in range(max_lines):
        end = text.find("\n", end + 1, max_chars)
        if end < 0:
            return text[:max_chars]
    return text[: end + 1]


def _line_count(text: str) -> int:
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def output_block(
    text: Any,
    index: int,
    *,
    is_error: bool = False,
    max_lines: int = OUTPUT_PREVIEW_LINES,
    max_chars: int = OUTPUT_PREVIEW_CHARS,
) -> OutputBlock:
    """Output text as a preview of its first lines; `truncated` says there is more to load."""
    source = as_text(text)
    shown = _preview(source, max_lines, max_chars)
    truncated = len(shown) < len(source)
    if not truncated:
        shown = source
    size = utf8_size(source)
    return OutputBlock(
        html=format_html("<pre><code>{}</code></pre>", shown),
        text=shown,
        index=index,
        truncated=truncated,
        full_length=len(source),
        full_bytes=size,
        size_label=format_size(size),
        shown_lines=_line_count(shown),
        total_lines=_line_count(source),
        is_error=is_error,
    )


def render_full_text(text: Any) -> SafeString:
    """The whole text of a block as escaped preformatted text (for the lazily loaded "show all")."""
    return format_html("<pre><code>{}</code></pre>", clean_text(as_text(text)))


def _sniff_image(raw: bytes) -> str | None:
    """The image type from its magic bytes, among the inline types only."""
    if raw.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if raw.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if raw.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if len(raw) >= 12 and raw.startswith(b"RIFF") and raw[8:12] == b"WEBP":
        return "image/webp"
    return None


def image_block(block: dict[str, Any], index: int, *, max_bytes: int = IMAGE_MAX_BYTES) -> ImageBlock:
    """An image content block: a data: URL only for a valid PNG/JPEG/GIF/WebP under the size cap.

    SVG is never inline (it is a document that can carry script), `blob:` references point to the agent's
    local blob store which Arbor cannot read, and the base64 is decoded to check it and to read the real type.
    """
    declared = as_text(block.get("mimeType"))
    data = block.get("data")
    if isinstance(data, str) and data.startswith("blob:"):
        return ImageBlock(index, declared, "blob", None, BLOB_IMAGE_MESSAGE, None)
    if declared.strip().lower() not in INLINE_IMAGE_TYPES:
        return ImageBlock(
            index, declared, "unsupported", None, "image not shown (type not displayed inline)", None
        )
    if not isinstance(data, str) or not data:
        return ImageBlock(index, declared, "invalid", None, "image not shown (no image data)", None)
    estimated = len(data) // 4 * 3
    if estimated > max_bytes + 3:
        message = f"image not shown (too large: {format_size(estimated)})"
        return ImageBlock(index, declared, "too_large", None, message, estimated)
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return ImageBlock(index, declared, "invalid", None, "image not shown (invalid base64 data)", None)
    sniffed = _sniff_image(raw)
    if sniffed is None:
        message = "image not shown (not a PNG, JPEG, GIF or WebP image)"
        return ImageBlock(index, declared, "invalid", None, message, len(raw))
    # validate=True accepted only the base64 alphabet, so `data` cannot break out of the attribute.
    return ImageBlock(index, declared, "inline", f"data:{sniffed};base64,{data}", "", len(raw))


def fallback_notice(block: dict[str, Any]) -> NoticeBlock:
    """oh-my-pi's ``fallback`` assistant block: the request went to another model (it carries no output)."""

    def model(side: Any) -> str:
        if isinstance(side, dict):
            name = as_text(side.get("model")) or "?"
            provider = as_text(side.get("provider"))
            return f"{provider}/{name}" if provider and "/" not in name else name
        return as_text(side) or "?"

    text = f"Provider fallback: {model(block.get('from'))} → {model(block.get('to'))}"
    reason = as_text(block.get("reason"))
    return NoticeBlock(f"{text} ({reason})" if reason else text, "warning")


def server_tool_block(block: dict[str, Any]) -> JsonBlock:
    """oh-my-pi's ``anthropicServerTool`` assistant block: a server-side tool's block (web search and its
    results ...), kept whole as JSON under the inner block's type."""
    inner = block.get("block")
    kind = as_text(inner.get("type")) if isinstance(inner, dict) else ""
    name = as_text(inner.get("name")) if isinstance(inner, dict) else ""
    label = "server tool" + (f": {kind}" if kind else "") + (f" ({name})" if name else "")
    return json_block(label, inner if inner is not None else block)


def unknown_block(block: Any) -> JsonBlock:
    """A content block of a type this renderer does not know, as JSON."""
    kind = as_text(block.get("type")) if isinstance(block, dict) else type(block).__name__
    return json_block(f"{kind or 'unknown'} block", block)
