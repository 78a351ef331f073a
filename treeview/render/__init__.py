"""Rendering of session entries for the conversation pane: safe HTML fragments and view models.

Message content is hostile input. Generated HTML passes nh3 (`sanitize`), plain text passes Django's escaping,
and nothing from an entry is marked safe any other way. Django-aware, but no views and no templates here.
"""

from treeview.render.blocks import (
    BLOB_IMAGE_MESSAGE,
    Block,
    CodeBlock,
    Field,
    ImageBlock,
    JsonBlock,
    NoticeBlock,
    OutputBlock,
    TextBlock,
    ToolCallBlock,
    render_full_text,
)
from treeview.render.entries import (
    KINDS,
    MARKER_KINDS,
    EntryView,
    UsageView,
    full_block_text,
    render_entries,
    render_entry,
)
from treeview.render.highlight import highlight_code, highlight_css
from treeview.render.markdown import MARKDOWN_MAX_CHARS, render_markdown
from treeview.render.sanitize import sanitize
from treeview.render.tools import ToolCallMap, build_tool_call_map

__all__ = [
    "BLOB_IMAGE_MESSAGE",
    "KINDS",
    "MARKDOWN_MAX_CHARS",
    "MARKER_KINDS",
    "Block",
    "CodeBlock",
    "EntryView",
    "Field",
    "ImageBlock",
    "JsonBlock",
    "NoticeBlock",
    "OutputBlock",
    "TextBlock",
    "ToolCallBlock",
    "ToolCallMap",
    "UsageView",
    "build_tool_call_map",
    "full_block_text",
    "highlight_code",
    "highlight_css",
    "render_entries",
    "render_entry",
    "render_full_text",
    "render_markdown",
    "sanitize",
]
