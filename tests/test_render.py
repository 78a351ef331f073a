"""Tests for treeview.render: Markdown, highlighting, entry view models, and XSS resistance of the output.

The produced HTML is checked with `html.parser` (tags, attribute names, URL schemes), not only by substring.
A small test-only template renders every field of the view models the way a page template would (autoescaped).
"""

from __future__ import annotations

import base64
import re
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from django.template import Context, Engine
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from treeview.render import (
    BLOB_IMAGE_MESSAGE,
    KINDS,
    CodeBlock,
    EntryView,
    ImageBlock,
    JsonBlock,
    NoticeBlock,
    OutputBlock,
    TextBlock,
    ToolCallBlock,
    build_tool_call_map,
    full_block_text,
    highlight_code,
    highlight_css,
    render_entries,
    render_entry,
    render_full_text,
    render_markdown,
)
from treeview.render.blocks import OUTPUT_PREVIEW_LINES
from treeview.render.markdown import MARKDOWN_MAX_CHARS
from treeview.session.session_manager import SessionManager

DATA = Path(__file__).parent / "data"
# The session files (tests/data/redaction/ holds entry corpora for the redaction tests, not sessions).
FIXTURES = (
    sorted(DATA.glob("handmade/*.jsonl"))
    + sorted(DATA.glob("real/*.jsonl"))
    + sorted(DATA.glob("latest/*.jsonl"))
)

PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
SVG = base64.b64encode(
    b'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(1)</script></svg>'
)

# ---------------------------------------------------------------------------------------------------------
# Helpers: a page-like template over the view models, and an HTML auditor
# ---------------------------------------------------------------------------------------------------------

PAGE = Engine(autoescape=True).from_string(
    """{% for v in views %}<article class="entry entry-{{ v.kind }}" data-entry-id="{{ v.id }}" \
data-parent="{{ v.parent_id|default:'' }}" title="{{ v.timestamp }}">
<h3>{{ v.title }}</h3><p>{{ v.summary }}</p>
<p>{{ v.role }} {{ v.attribution }} {{ v.model }} {{ v.provider }} {{ v.api }} {{ v.stop_reason }}</p>
<p>{{ v.error }} {{ v.tool_name }} {{ v.tool }} {{ v.tool_call_id }} {{ v.custom_type }} {{ v.target_id }}</p>
<p>{{ v.label }} {{ v.exit_code }} {{ v.usage.summary }}</p>
<dl>{% for f in v.fields %}<dt>{{ f.label }}</dt><dd>{{ f.value }}</dd>{% endfor %}</dl>
{% for label, files in v.file_lists %}<ul title="{{ label }}">{% for name in files %}<li>{{ name }}</li>\
{% endfor %}</ul>{% endfor %}
{% for b in v.blocks %}<div class="block block-{{ b.kind }}">
{% if b.kind == "tool_call" %}<h4 title="{{ b.call_id }}" data-tool="{{ b.tool }}">{{ b.name }}</h4>
<p>{{ b.summary }} {{ b.intent }}</p>
<dl>{% for f in b.fields %}<dt>{{ f.label }}</dt><dd>{{ f.value }}</dd>{% endfor %}</dl>
{% if b.code %}<figure title="{{ b.code.label }}">{{ b.code.html }}</figure>{% endif %}
<details><summary>{{ b.arguments.label }}</summary>{{ b.arguments.html }}</details>
{% elif b.kind == "image" %}{% if b.data_url %}<img src="{{ b.data_url }}" alt="{{ b.mime_type }}">\
{% else %}<p title="{{ b.mime_type }}">{{ b.message }}</p>{% endif %}
{% elif b.kind == "notice" %}<p>{{ b.text }}</p>
{% else %}<figure title="{{ b.label }}">{{ b.html }}</figure>\
{% if b.truncated %}<p>show all ({{ b.size_label }})</p>{% endif %}
{% endif %}</div>{% endfor %}</article>{% endfor %}"""
)

# Tags the sanitizer allows, plus the ones the test template itself writes.
ALLOWED_TAGS = {
    "p", "br", "strong", "em", "del", "s", "code", "pre", "span", "blockquote", "ul", "ol", "li",
    "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td", "a", "hr",
    "article", "dl", "dt", "dd", "div", "figure", "details", "summary", "img",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {"class", "href", "title", "rel", "start", "src", "alt"}
ALLOWED_ATTRIBUTES |= {"data-entry-id", "data-parent", "data-tool"}  # written by the test template
DATA_URL = re.compile(r"data:image/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/]+={0,2}")
SAFE_HREF = re.compile(r"(https?:|mailto:)", re.IGNORECASE)


class Audit(HTMLParser):
    """Collects every start tag, attribute and text run of a document."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str, str]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes.extend((tag, name, value or "") for name, value in attrs)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def audit(html: str) -> Audit:
    """Parse `html` and assert that nothing in it can run script or load a resource."""
    parser = Audit()
    parser.feed(html)
    parser.close()
    assert not re.search(r"<\s*(script|iframe|style|svg|math|object|embed|base|meta|link)", html, re.I)
    assert set(parser.tags) <= ALLOWED_TAGS, set(parser.tags) - ALLOWED_TAGS
    for tag, name, value in parser.attributes:
        assert name in ALLOWED_ATTRIBUTES, (tag, name, value)
        assert not name.startswith("on")
        # Plain text in title/data-* attributes is inert; only URL attributes could act on a scheme.
        if name in ("href", "src"):
            lowered = re.sub(r"\s", "", value).lower()
            assert "javascript:" not in lowered and "vbscript:" not in lowered, (tag, name, value)
        if name == "href":
            assert tag == "a" and SAFE_HREF.match(value), (tag, value)
        if name == "src":
            assert tag == "img" and DATA_URL.fullmatch(value), (tag, value[:100])
        if name == "rel":
            assert value == "nofollow noopener noreferrer"
    return parser


def page(views: list[EntryView]) -> str:
    return str(PAGE.render(Context({"views": views})))


def message_entry(message: dict[str, Any], entry_id: str = "e1", parent: str | None = None) -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-05-01T10:00:00.000Z",
        "message": message,
    }


def entry(kind: str, entry_id: str = "e1", **fields: Any) -> dict[str, Any]:
    return {"type": kind, "id": entry_id, "parentId": None, "timestamp": "2026-05-01T10:00:00.000Z", **fields}


def assistant(*content: dict[str, Any], **extra: Any) -> dict[str, Any]:
    message = {
        "role": "assistant",
        "content": list(content),
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "usage": {
            "input": 1200,
            "output": 85,
            "cacheRead": 300,
            "cacheWrite": 0,
            "totalTokens": 1585,
            "cost": {"input": 0.0036, "output": 0.001275, "cacheRead": 0, "cacheWrite": 0, "total": 0.004875},
        },
        "stopReason": "toolUse",
        "timestamp": 1777629602963,
    }
    message.update(extra)
    return message_entry(message)


def tool_call(name: str, args: Any, call_id: str = "call_1") -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": args}


def call_block(name: str, args: Any) -> ToolCallBlock:
    view = render_entry(assistant(tool_call(name, args)))
    (block,) = view.blocks
    assert isinstance(block, ToolCallBlock)
    return block


def tool_result(text: str, name: str = "bash", call_id: str = "call_1", **extra: Any) -> dict[str, Any]:
    message = {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": [{"type": "text", "text": text}],
        "isError": False,
        "timestamp": 1777629603963,
    }
    message.update(extra)
    return message_entry(message, "r1", "e1")


def blocks_of(view: EntryView, kind: type) -> list[Any]:
    return [block for block in view.blocks if isinstance(block, kind)]


# ---------------------------------------------------------------------------------------------------------
# Markdown
# ---------------------------------------------------------------------------------------------------------


def test_markdown_renders_commonmark_tables_and_strikethrough() -> None:
    html = render_markdown(
        "# Title\n\n**bold** _em_ ~~gone~~ `code`\n\n| a | b |\n|---|--:|\n| 1 | 2 |\n\n> quote"
    )
    parser = audit(html)
    assert {"h1", "strong", "em", "s", "code", "table", "th", "td", "blockquote"} <= set(parser.tags)
    assert not any(name == "style" for _, name, _ in parser.attributes)  # alignment styles are dropped


def test_markdown_links_get_rel_and_only_web_schemes() -> None:
    html = render_markdown(
        "[ok](https://example.com/a?b=1) [mail](mailto:a@b.c) [rel](/admin/) [ftp](ftp://x.y/)"
    )
    parser = audit(html)
    hrefs = [value for _, name, value in parser.attributes if name == "href"]
    assert hrefs == ["https://example.com/a?b=1", "mailto:a@b.c"]
    assert "rel" in "".join(parser.text) and "ftp" in "".join(parser.text)  # the text stays


def test_markdown_code_fence_is_highlighted_by_its_language_only() -> None:
    html = render_markdown("```python\ndef f():\n    return '<b>'\n```")
    assert '<pre class="highlight">' in html
    assert '<span class="k">def</span>' in html
    assert "&lt;b&gt;" in html
    # No language: the same code is not guessed, only escaped.
    plain = render_markdown("```\ndef f():\n    return '<b>'\n```")
    assert "<span" not in plain and "&lt;b&gt;" in plain
    unknown = render_markdown("```no-such-language\n<script>alert(1)</script>\n```")
    assert "<span" not in unknown and "&lt;script&gt;" in unknown
    audit(html + plain + unknown)


def test_markdown_images_become_their_alt_text() -> None:
    html = render_markdown("![a *diagram*](https://tracker.example/pixel.png) ![](http://x/y.png)")
    parser = audit(html)
    assert "img" not in parser.tags
    assert "[image: a diagram]" in "".join(parser.text) and "[image]" in "".join(parser.text)


def test_markdown_raw_html_is_shown_as_text() -> None:
    parser = audit(render_markdown("<b>bold</b> <script>alert(1)</script>"))
    assert "b" not in parser.tags
    assert "<script>alert(1)</script>" in "".join(parser.text)


def test_oversized_markdown_is_cut_with_a_notice() -> None:
    text = "word " * 100_000
    html = render_markdown(text)
    assert len(html) < MARKDOWN_MAX_CHARS + 1_000
    cut = len(text) - MARKDOWN_MAX_CHARS
    assert f"{cut:,} more characters not shown" in html and f"({len(text):,} in all)" in html
    assert "not shown" not in render_markdown("short")


def test_lone_surrogates_are_replaced_so_the_page_can_be_encoded() -> None:
    html = render_markdown("a\ud800b")
    assert "a\ufffdb" in html
    html.encode("utf-8")
    view = render_entry(tool_result("out\udc00put", name="na\ud800me"))
    page([view]).encode("utf-8")


def test_highlight_code_by_file_name_and_css() -> None:
    assert '<span class="k">def</span>' in highlight_code("def f(): pass", filename="src/app.py").html
    assert highlight_code("x", filename="Makefile").language == "Makefile"
    assert highlight_code("<x>", filename="notes.unknownext").language is None
    assert ".highlight .k" in highlight_css()


# ---------------------------------------------------------------------------------------------------------
# Messages
# ---------------------------------------------------------------------------------------------------------


def test_user_message_string_and_blocks() -> None:
    view = render_entry(message_entry({"role": "user", "content": "Hello *there*", "timestamp": 1}))
    assert view.kind == "user" and view.title == "User" and view.role == "user"
    (block,) = view.blocks
    assert isinstance(block, TextBlock) and "<em>there</em>" in block.html
    view = render_entry(
        message_entry(
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "see"},
                    {"type": "image", "data": PNG_1X1, "mimeType": "image/png"},
                ],
                "attribution": "user",
            }
        )
    )
    assert [block.kind for block in view.blocks] == ["text", "image"]
    assert view.summary == "see" and view.attribution == "user"


def test_developer_message_is_a_user_kind_with_its_role() -> None:
    view = render_entry(message_entry({"role": "developer", "content": "rules", "attribution": "agent"}))
    assert view.kind == "user" and view.role == "developer" and view.title == "Developer"


def test_assistant_text_thinking_usage_and_model() -> None:
    view = render_entry(
        assistant(
            {"type": "thinking", "thinking": "Let me **think**", "thinkingSignature": "sig"},
            {"type": "redactedThinking", "data": "opaque"},
            {"type": "text", "text": "Done."},
            stopReason="stop",
            duration=2500,
        )
    )
    assert view.kind == "assistant"
    assert [block.kind for block in view.blocks] == ["thinking", "redacted_thinking", "text"]
    assert "<strong>think</strong>" in view.blocks[0].html
    assert (
        view.model == "claude-sonnet-4-5"
        and view.provider == "anthropic"
        and view.api == "anthropic-messages"
    )
    assert view.usage is not None
    assert (view.usage.input, view.usage.output, view.usage.cache_read, view.usage.total_tokens) == (
        1200,
        85,
        300,
        1585,
    )
    assert view.usage.cost_total == pytest.approx(0.004875)
    assert view.usage.summary == "1,585 tokens (in 1,200 · out 85 · cache 300 read / 0 written) · $0.0049"
    assert view.error is None and not view.aborted
    assert ("duration", "2.5 s") in [(f.label, f.value) for f in view.fields]


def test_assistant_error_and_aborted_turns() -> None:
    failed = render_entry(assistant(stopReason="error", errorMessage="429 rate limited"))
    assert failed.error == "429 rate limited" and not failed.aborted and failed.stop_reason == "error"
    aborted = render_entry(assistant({"type": "text", "text": "partial"}, stopReason="aborted"))
    assert aborted.aborted and aborted.error == "Aborted"
    cut = render_entry(assistant({"type": "text", "text": "long"}, stopReason="length"))
    assert any(isinstance(b, NoticeBlock) and "token limit" in b.text for b in cut.blocks)


def test_old_usage_without_total_tokens_is_summed() -> None:
    view = render_entry(assistant(usage={"input": 10, "output": 5, "cacheRead": 1, "cacheWrite": 2}))
    assert view.usage is not None and view.usage.total_tokens == 18 and view.usage.cost_total is None


def test_bash_tool_call_summary() -> None:
    block = call_block("bash", {"command": "ls -la | grep '<x>'\necho done", "timeout": 30})
    assert block.tool == "bash" and block.summary == "ls -la | grep '<x>'…"
    assert block.code is not None and block.code.label == "command" and block.code.language == "Bash"
    assert "&lt;x&gt;" in block.code.html
    assert [(f.label, f.value) for f in block.fields] == [("timeout", "30")]
    assert '"command"' in block.arguments.html or "command" in block.arguments.html


def test_read_tool_call_summary_with_offset_and_limit() -> None:
    block = call_block("read", {"path": "src/app.py", "offset": 10, "limit": 50})
    assert block.tool == "read" and block.summary == "src/app.py (lines 10–59)"
    assert [(f.label, f.value) for f in block.fields] == [
        ("path", "src/app.py"),
        ("offset", "10"),
        ("limit", "50"),
    ]
    assert call_block("read", {"path": "a.txt", "offset": 5}).summary == "a.txt (from line 5)"
    assert call_block("read", {"path": "a.txt"}).summary == "a.txt"


def test_write_tool_call_highlights_content_by_extension() -> None:
    block = call_block("write", {"path": "pkg/mod.py", "content": "def f():\n    return 1\n"})
    assert block.summary == "pkg/mod.py"
    assert block.code is not None and block.code.label == "content" and block.code.language == "Python"
    assert '<span class="k">def</span>' in block.code.html
    assert ("size", "2 lines, 22 B") in [(f.label, f.value) for f in block.fields]


def test_edit_tool_call_is_a_unified_diff() -> None:
    block = call_block("edit", {"path": "a.py", "oldText": "x = 1\ny = 2\n", "newText": "x = 1\ny = 3\n"})
    assert block.tool == "edit" and block.code is not None and block.code.label == "diff"
    html = block.code.html
    assert '<span class="gd">-y = 2</span>' in html and '<span class="gi">+y = 3</span>' in html
    assert "--- a/a.py" in html and "+++ b/a.py" in html


def test_edit_tool_call_with_edits_list_in_both_spellings() -> None:
    block = call_block(
        "edit",
        {
            "path": "a.py",
            "edits": [
                {"old_text": "one", "new_text": "uno"},
                {"oldText": "two", "newText": "dos", "all": True},
            ],
        },
    )
    assert block.code is not None
    html = block.code.html
    assert "-one" in html and "+uno" in html and "-two" in html and "+dos" in html
    assert "a.py (edit 1)" in html and "a.py (edit 2)" in html
    assert ("edits", "2") in [(f.label, f.value) for f in block.fields]
    patch = call_block("edit", {"path": "a.py", "edits": [{"op": "update", "diff": "@@\n-a\n+b"}]})
    assert patch.code is not None and '<span class="gi">+b</span>' in patch.code.html
    empty = call_block("edit", {"path": "parser.py", "edits": []})
    assert empty.code is None and empty.summary == "parser.py"


def test_grep_find_ls_calls_show_their_arguments() -> None:
    grep = call_block("grep", {"pattern": "TODO", "path": "src", "glob": "*.py", "ignoreCase": True})
    assert grep.tool == "grep" and grep.summary == "TODO in src"
    assert [(f.label, f.value) for f in grep.fields] == [
        ("pattern", "TODO"),
        ("path", "src"),
        ("glob", "*.py"),
        ("ignoreCase", "true"),
    ]
    search = call_block("search", {"pattern": "fn", "paths": ["a", "b"], "i": True})
    assert search.tool == "grep" and search.summary == "fn in a, b"
    find = call_block("find", {"pattern": "*.ts", "path": "packages"})
    assert find.tool == "find" and find.summary == "*.ts in packages"
    ls = call_block("ls", {"path": "docs", "limit": 20})
    assert (
        ls.tool == "ls"
        and ls.summary == "docs"
        and ("limit", "20") in [(f.label, f.value) for f in ls.fields]
    )


def test_unknown_tool_call_shows_json_arguments() -> None:
    block = call_block("web_fetch", {"url": "https://example.com", "depth": {"max": 2}})
    assert block.tool == "" and block.code is None and block.fields == []
    assert block.summary == "url: https://example.com"
    assert isinstance(block.arguments, JsonBlock) and '"max"' in block.arguments.html


def test_tool_call_map_gives_tool_results_their_call() -> None:
    call = assistant(tool_call("read", {"path": "README.md", "limit": 5}, "call_9"))
    result = tool_result("# Readme", name="", call_id="call_9")
    calls = build_tool_call_map([call, result])
    assert calls == {"call_9": ("read", {"path": "README.md", "limit": 5})}
    views = render_entries([call, result])
    assert views[1].kind == "tool_result" and views[1].tool_name == "read" and views[1].tool == "read"
    assert views[1].summary == "README.md (first 5 lines)"
    assert render_entry(result).summary == ""  # no map: no description of the call


def test_bash_tool_result_exit_code_from_details_or_closing_line() -> None:
    ok = render_entry(tool_result("fine", details={"exitCode": 0}))
    assert ok.exit_code == 0 and not ok.is_error
    failed = render_entry(tool_result("boom\n\nCommand exited with code 2", isError=True, details={}))
    assert failed.exit_code == 2 and failed.is_error
    (output,) = blocks_of(failed, OutputBlock)
    assert output.is_error
    assert render_entry(tool_result("no code here")).exit_code is None
    assert render_entry(tool_result("x", name="read", details={"exitCode": 3})).exit_code is None


def test_long_tool_output_is_collapsed_and_available_in_full() -> None:
    text = "".join(f"line {i}\n" for i in range(1000))
    result = tool_result(text)
    view = render_entry(result)
    (output,) = blocks_of(view, OutputBlock)
    assert output.truncated and output.full_length == len(text) and output.full_bytes == len(text)
    assert output.shown_lines == OUTPUT_PREVIEW_LINES and output.total_lines == 1000
    assert output.text.endswith("line 39\n") and output.size_label == "8.7 KB"
    assert full_block_text(result, output.index) == text
    assert str(render_full_text(text)).count("\n") == 1000
    short = render_entry(tool_result("one\ntwo\n"))
    (output,) = blocks_of(short, OutputBlock)
    assert not output.truncated and output.text == "one\ntwo\n"


def test_tool_result_details_diff_and_full_output_path() -> None:
    view = render_entry(
        tool_result(
            "Successfully replaced text.",
            name="edit",
            details={
                "diff": "-  1 old\n+  1 new",
                "fullOutputPath": "/tmp/out.log",
                "truncation": {"truncated": True},
            },
        )
    )
    (code,) = blocks_of(view, CodeBlock)
    assert code.label == "diff" and '<span class="gi">+  1 new</span>' in code.html
    labels = [f.label for f in view.fields]
    assert "full output" in labels and "truncated" in labels


def test_tool_result_without_content_and_pruned() -> None:
    view = render_entry(tool_result("", content=[], prunedAt=1777629609000))
    texts = [b.text for b in blocks_of(view, NoticeBlock)]
    assert "(no output)" in texts and any("pruned" in text for text in texts)


def test_bash_and_python_executions() -> None:
    bash = render_entry(
        message_entry(
            {
                "role": "bashExecution",
                "command": "make test",
                "output": "FAILED",
                "exitCode": 1,
                "cancelled": False,
                "truncated": True,
                "excludeFromContext": True,
            }
        )
    )
    assert bash.kind == "bash" and bash.exit_code == 1 and bash.is_error and bash.summary == "make test"
    assert [b.kind for b in bash.blocks] == ["code", "output", "notice"]
    assert any(f.value.startswith("excluded") for f in bash.fields)
    python = render_entry(
        message_entry(
            {"role": "pythonExecution", "code": "print(1)", "output": "", "exitCode": 0, "cancelled": True}
        )
    )
    assert python.kind == "python" and python.exit_code == 0 and not python.is_error
    code = python.blocks[0]
    assert isinstance(code, CodeBlock) and code.language == "Python"
    assert [b.text for b in blocks_of(python, NoticeBlock)] == ["(no output)", "Execution cancelled."]
    assert full_block_text(message_entry({"role": "bashExecution", "output": "all"}), 0) == "all"


def test_custom_messages_hidden_and_details() -> None:
    view = render_entry(
        entry(
            "custom_message",
            customType="rewind-report",
            content="Rewound **3** turns",
            display=False,
            details={"turns": 3},
            attribution="agent",
        )
    )
    assert view.kind == "custom_message" and view.hidden and view.custom_type == "rewind-report"
    assert [b.kind for b in view.blocks] == ["text", "json"] and view.attribution == "agent"
    as_message = render_entry(
        message_entry({"role": "hookMessage", "customType": "x", "content": [{"type": "text", "text": "hi"}]})
    )
    assert as_message.kind == "custom_message" and not as_message.hidden and as_message.role == "hookMessage"


def test_file_mention_message() -> None:
    view = render_entry(
        message_entry(
            {
                "role": "fileMention",
                "files": [
                    {"path": "a.py", "content": "import os\n"},
                    {"path": "big.bin", "skippedReason": "tooLarge"},
                ],
            }
        )
    )
    assert view.kind == "file_mention" and view.summary == "a.py, big.bin"
    assert [b.kind for b in view.blocks] == ["code", "notice"]


# ---------------------------------------------------------------------------------------------------------
# Other entries
# ---------------------------------------------------------------------------------------------------------


def test_compaction_card() -> None:
    view = render_entry(
        entry(
            "compaction",
            summary="## Goal\nShip it",
            shortSummary="Shipped the parser.",
            firstKeptEntryId="b2",
            tokensBefore=51234,
            details={"readFiles": ["a.py"], "modifiedFiles": ["b.py", "c.py"]},
            fromExtension=False,
            preserveData={},
        )
    )
    assert view.kind == "compaction" and not view.is_marker and view.summary == "Shipped the parser."
    assert "<h2>Goal</h2>" in view.blocks[0].html
    assert view.file_lists == [("Read files", ["a.py"]), ("Modified files", ["b.py", "c.py"])]
    fields = {f.label: f.value for f in view.fields}
    assert fields["tokens before"] == "51,234" and fields["first kept entry"] == "b2"


def test_branch_summary_card_and_empty_marker() -> None:
    view = render_entry(entry("branch_summary", fromId="a1", summary="Tried X", fromExtension=True))
    assert view.kind == "branch_summary" and ("source", "an extension") in [
        (f.label, f.value) for f in view.fields
    ]
    marker = render_entry(
        entry("branch_summary", fromId="a1", summary="", details={"kind": "discarded-entry-branch"})
    )
    assert isinstance(marker.blocks[0], NoticeBlock)
    assert ("details", "discarded-entry-branch") in [(f.label, f.value) for f in marker.fields]


def test_model_thinking_mode_and_label_markers() -> None:
    omp = render_entry(entry("model_change", model="openai/gpt-5.1", role="smol"))
    assert omp.kind == "model_change" and omp.is_marker and omp.summary == "model: openai/gpt-5.1 (smol)"
    pi = render_entry(entry("model_change", provider="anthropic", modelId="claude"))
    assert pi.summary == "model: anthropic/claude"
    thinking = render_entry(entry("thinking_level_change", thinkingLevel=None))
    assert thinking.kind == "thinking_change" and thinking.summary == "thinking: off"
    mode = render_entry(entry("mode_change", mode="plan", data={"planFilePath": "local://PLAN.md"}))
    assert mode.kind == "mode_change" and mode.summary == "mode: plan"
    assert [(f.label, f.value) for f in mode.fields] == [("planFilePath", "local://PLAN.md")]
    label = render_entry(entry("label", targetId="b1", label="checkpoint"))
    assert label.kind == "label" and label.label == "checkpoint" and label.target_id == "b1"
    assert label.summary == "label “checkpoint” on b1"
    cleared = render_entry(entry("label", targetId="b1"))
    assert cleared.label is None and cleared.summary == "label cleared on b1"


def test_custom_entry_state_entries_and_unknown_types() -> None:
    custom = render_entry(entry("custom", customType="todo-state", data={"items": [1, 2]}))
    assert custom.kind == "custom" and custom.custom_type == "todo-state"
    assert isinstance(custom.blocks[0], JsonBlock)
    tier = render_entry(entry("service_tier_change", serviceTier="flex"))
    assert tier.kind == "state" and tier.is_marker and tier.summary == "service tier: flex"
    ttsr = render_entry(entry("ttsr_injection", injectedRules=["a", "b"]))
    assert ttsr.summary == "rules injected: a, b"
    usage = render_entry(
        entry("model_usage", purpose="title", model="m", usage={"input": 1, "output": 2, "totalTokens": 3})
    )
    assert usage.usage is not None and usage.usage.total_tokens == 3
    unknown = render_entry(entry("future_thing", payload={"x": 1}))
    assert unknown.kind == "unknown" and unknown.summary == "[future_thing]"
    assert "payload" in unknown.blocks[0].html
    odd_role = render_entry(message_entry({"role": "alien", "content": "?"}))
    assert odd_role.kind == "unknown" and odd_role.role == "alien"


def test_session_init_entry() -> None:
    view = render_entry(
        entry("session_init", systemPrompt=["You are", "a subagent"], task="Fix it", tools=["bash"])
    )
    assert view.kind == "session_init" and view.summary == "Fix it"
    assert [b.kind for b in view.blocks] == ["text", "code"]
    assert full_block_text(entry("session_init", task="Fix it"), 0) == "Fix it"


def test_full_block_text_for_content_blocks() -> None:
    message = assistant({"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "answer"})
    assert full_block_text(message, 0) == "hmm" and full_block_text(message, 1) == "answer"
    assert full_block_text(message, 2) is None and full_block_text(message, -1) is None
    assert full_block_text(entry("compaction", summary="S"), 0) == "S"
    assert full_block_text(entry("label", targetId="x"), 0) is None


# ---------------------------------------------------------------------------------------------------------
# Images
# ---------------------------------------------------------------------------------------------------------


def image(data: Any, mime: Any = "image/png") -> ImageBlock:
    view = render_entry(
        message_entry({"role": "user", "content": [{"type": "image", "data": data, "mimeType": mime}]})
    )
    (block,) = view.blocks
    assert isinstance(block, ImageBlock)
    return block


def test_valid_png_is_inline_as_data_url() -> None:
    block = image(PNG_1X1)
    assert block.status == "inline" and block.data_url == f"data:image/png;base64,{PNG_1X1}"
    audit(
        page([render_entry(message_entry({"role": "user", "content": [{"type": "image", "data": PNG_1X1}]}))])
    )


def test_image_type_comes_from_the_bytes_not_the_declaration() -> None:
    block = image(PNG_1X1, "image/jpeg")
    assert (
        block.status == "inline"
        and block.data_url is not None
        and block.data_url.startswith("data:image/png;")
    )


def test_blob_reference_is_a_placeholder() -> None:
    block = image("blob:sha256:" + "ab" * 32)
    assert block.status == "blob" and block.data_url is None and block.message == BLOB_IMAGE_MESSAGE


@pytest.mark.parametrize(
    "mime", ["image/svg+xml", "text/html", "IMAGE/SVG+XML", "application/javascript", None]
)
def test_svg_and_non_image_types_are_never_inline(mime: Any) -> None:
    block = image(SVG.decode(), mime)
    assert block.status == "unsupported" and block.data_url is None


def test_svg_bytes_declared_as_png_are_refused() -> None:
    assert image(SVG.decode(), "image/png").status == "invalid"


@pytest.mark.parametrize(
    "data", ["not base64!", PNG_1X1 + '" onerror="alert(1)', PNG_1X1[:-3], "", 42, None, "iVBO\nRw0KGgo="]
)
def test_invalid_base64_is_refused(data: Any) -> None:
    block = image(data)
    assert block.status == "invalid" and block.data_url is None


def test_oversized_image_is_not_inline_and_not_decoded() -> None:
    block = image("A" * (4 * 1024 * 1024))
    assert block.status == "too_large" and block.data_url is None and "too large" in block.message


# ---------------------------------------------------------------------------------------------------------
# Fixtures: every entry of every file renders
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", FIXTURES, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_every_fixture_entry_renders(path: Path) -> None:
    manager = SessionManager.open(path)
    views = render_entries(manager.entries)
    assert len(views) == len(manager.entries)
    for view, source in zip(views, manager.entries, strict=True):
        assert view.kind in KINDS
        assert view.id == source.get("id", "")
        assert not any(isinstance(b, NoticeBlock) and b.level == "error" for b in view.blocks), source
    audit(page(views))


def test_newest_agents_entries_are_shown_not_dropped() -> None:
    # pi 1.6's usage and context edits, omp 18's remote compaction and discarded-branch marker.
    pi = render_entries(SessionManager.open(DATA / "latest" / "pi16w_features_200.jsonl").entries)
    usage = next(view for view in pi if view.summary.startswith("usage:"))
    assert usage.kind == "state" and usage.usage is not None
    edits = [view for view in pi if view.summary.startswith("context edit:")]
    assert edits and all(view.target_id for view in edits)
    omp = SessionManager.open(DATA / "latest" / "omp18w_features_200.jsonl").entries
    views = render_entries(omp)
    notices = [b.text for v in views for b in v.blocks if isinstance(b, NoticeBlock)]
    assert any("Remote compaction" in text for text in notices)
    assert any("discarded branch" in text for text in notices)


def test_real_fixture_covers_the_main_kinds() -> None:
    manager = SessionManager.open(DATA / "real" / "pi-mono_large-session_v1.jsonl")
    views = render_entries(manager.entries)
    kinds = {view.kind for view in views}
    assert {"user", "assistant", "tool_result", "thinking_change"} <= kinds
    tools = {block.tool for view in views for block in view.blocks if isinstance(block, ToolCallBlock)}
    assert {"bash", "read", "edit", "write"} <= tools
    results = [view for view in views if view.kind == "tool_result"]
    assert all(view.summary for view in results if view.tool in ("read", "edit", "write"))
    assert any(view.exit_code not in (None, 0) for view in results)


# ---------------------------------------------------------------------------------------------------------
# XSS corpus
# ---------------------------------------------------------------------------------------------------------

PAYLOADS = [
    "<script>alert(1)</script>",
    "<ScRiPt src=//evil.example/x.js></ScRiPt>",
    "<img src=x onerror=alert(1)>",
    "<svg onload=alert(1)><circle/></svg>",
    "<svg><script>alert(1)</script></svg>",
    "<math><mi xlink:href=javascript:alert(1)>x</mi></math>",
    "<iframe src=javascript:alert(1)></iframe>",
    "<iframe srcdoc='<script>alert(1)</script>'></iframe>",
    "<style>body{background:url(javascript:alert(1))}</style>",
    '<div style="width: expression(alert(1))">x</div>',
    '<p style="background:url(&#106;avascript:alert(1))">x</p>',
    "<object data=javascript:alert(1)></object><embed src=javascript:alert(1)>",
    "<form action=javascript:alert(1)><button>x</button></form>",
    "<meta http-equiv=refresh content='0;url=javascript:alert(1)'><base href=javascript:alert(1)//>",
    "<!--<script>alert(1)</script>--><![CDATA[<script>alert(1)</script>]]>",
    '<noscript><p title="</noscript><img src=x onerror=alert(1)>">',
    '"><script>alert(1)</script>',
    "'><img src=x onerror=alert(1)>",
    '" onmouseover="alert(1)" x="',
    "' onmouseover='alert(1)' x='",
    "[x](javascript:alert(1))",
    "[x](JaVaScRiPt:alert(1))",
    "[x](  javascript:alert(1) )",
    "[x](<javascript:alert(1)>)",
    "[x](&#106;avascript:alert(1))",
    "[x](&#x6A;&#x61;vascript:alert(1))",
    "[x](java&#x09;script:alert(1))",
    "[x](vbscript:msgbox(1))",
    "[x](VBScript:msgbox(1))",
    "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[x](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+)",
    '[x](http://example.com" onclick="alert(1))',
    '[x](https://example.com "title\\" onclick=\\"alert(1)")',
    "[x][ref]\n\n[ref]: javascript:alert(1)",
    "<javascript:alert(1)>",
    "<a href=\"javascript:alert(1)\">click</a> <a href='http://ok' onclick='alert(1)'>ok</a>",
    "![x](javascript:alert(1))",
    '![x" onerror="alert(1)](http://example.com/x.png)',
    "![<img src=x onerror=alert(1)>](data:image/png;base64,AAAA)",
    "```html\n<script>alert(1)</script>\n```",
    '```"><script>alert(1)</script>\n<b>x</b>\n```',
    "```javascript:alert(1)\n<img src=x onerror=alert(1)>\n```",
    "```svg onload=alert(1)\nx\n```",
    "| a |\n|---|\n| <script>alert(1)</script> |",
    "[x](mailto:a@b.c?body=<script>alert(1)</script>)",
    "<a href=&#x6A;avascript:alert(1)>x</a>",
    "\u202e<script>alert(1)</script>\x00<img src=x\x00 onerror=alert(1)>",
]


def hostile_entries(payload: str) -> list[dict[str, Any]]:
    """The payload in every place an entry can carry text: content, names, arguments, types, labels."""
    text_block = {"type": "text", "text": payload}
    return [
        entry("session_info", payload, name=payload),
        {**message_entry({"role": "user", "content": payload}, payload, payload), "timestamp": payload},
        message_entry({"role": "user", "content": [text_block], "attribution": payload}),
        message_entry({"role": "developer", "content": [text_block]}),
        assistant(
            {"type": "thinking", "thinking": payload},
            text_block,
            tool_call("bash", {"command": payload, payload: payload}, payload),
            tool_call("read", {"path": payload, "offset": payload, "limit": payload}),
            tool_call("write", {"path": f"x{payload}.html", "content": payload}),
            tool_call("write", {"path": payload, "content": payload}),
            tool_call("edit", {"path": payload, "oldText": payload, "newText": payload + "!"}),
            tool_call(
                "edit", {"path": payload, "edits": [{"old_text": payload, "new_text": "", "diff": payload}]}
            ),
            tool_call("grep", {"pattern": payload, "path": payload, "glob": [payload]}),
            tool_call("find", {"pattern": payload}),
            tool_call("ls", {"path": payload}),
            tool_call(payload, {payload: payload}),
            tool_call("x", payload),
            {"type": payload, "text": payload},
            {"type": "image", "data": payload, "mimeType": payload},
            {"type": "image", "data": SVG.decode(), "mimeType": "image/svg+xml"},
            {"type": "image", "data": base64.b64encode(payload.encode()).decode(), "mimeType": "text/html"},
            stopReason="error",
            errorMessage=payload,
            model=payload,
            provider=payload,
            api=payload,
            usage={"input": payload, "cost": {"total": payload}},
        ),
        assistant(text_block, stopReason=payload, intent=payload),
        tool_result(payload, name=payload, call_id=payload, isError=True, details={"diff": payload}),
        tool_result(payload, name="bash", details={"exitCode": payload, "fullOutputPath": payload}),
        tool_result(payload * 200, name="read"),
        message_entry({"role": "bashExecution", "command": payload, "output": payload, "exitCode": 1}),
        message_entry({"role": "pythonExecution", "code": payload, "output": payload, "exitCode": payload}),
        message_entry({"role": "custom", "customType": payload, "content": payload, "display": True}),
        message_entry({"role": "fileMention", "files": [{"path": payload, "content": payload}, payload]}),
        message_entry({"role": payload, "content": payload}),
        entry(
            "custom_message", customType=payload, content=[text_block], display=False, details={payload: 1}
        ),
        entry("custom", customType=payload, data={payload: payload}),
        entry("label", targetId=payload, label=payload),
        entry("model_change", model=payload, role=payload),
        entry("model_change", provider=payload, modelId=payload),
        entry("thinking_level_change", thinkingLevel=payload, configured=payload),
        entry("mode_change", mode=payload, data={"planFilePath": payload}),
        entry("mode_change", mode=payload, data=[payload]),
        entry(
            "compaction",
            summary=payload,
            shortSummary=payload,
            firstKeptEntryId=payload,
            tokensBefore=payload,
            details={"readFiles": [payload], "modifiedFiles": [payload, 1]},
        ),
        entry("branch_summary", fromId=payload, summary=payload, details={"kind": payload}),
        entry(
            "session_init",
            systemPrompt=payload,
            task=payload,
            tools=[payload],
            outputSchema={payload: payload},
        ),
        entry("title_change", title=payload, previousTitle=payload),
        entry("archive", targetId=payload, archived=True),
        entry("model_usage", purpose=payload, model=payload, usage={"input": 1}, errorMessage=payload),
        entry(payload, payload, parentId=payload, payload=payload),
    ]


@pytest.mark.parametrize("payload", PAYLOADS)
def test_xss_payloads_render_inert(payload: str) -> None:
    views = render_entries(hostile_entries(payload))
    for view in views:
        assert not any(isinstance(b, NoticeBlock) and b.level == "error" for b in view.blocks), view
        for block in view.blocks:
            if isinstance(block, ImageBlock):
                assert block.data_url is None
    html = page(views)
    parser = audit(html)
    assert "img" not in parser.tags  # no payload produced an image, and none of them was a real one


def test_script_in_text_is_kept_as_visible_text() -> None:
    payload = "<script>alert(1)</script>"
    parser = audit(page(render_entries(hostile_entries(payload))))
    text = "".join(parser.text)
    assert text.count(payload) > 20  # shown, escaped, almost everywhere it was put


def test_rendered_markdown_links_from_the_corpus_keep_no_dangerous_href() -> None:
    for payload in PAYLOADS:
        parser = audit(render_markdown(payload))
        for _tag, name, value in parser.attributes:
            if name == "href":
                assert value.lower().startswith(("http://", "https://", "mailto:")), (payload, value)


# ---------------------------------------------------------------------------------------------------------
# Huge inputs: bounded output and time
# ---------------------------------------------------------------------------------------------------------

FIVE_MB = 5 * 1024 * 1024


def timed(make: Any) -> tuple[EntryView, str, float]:
    start = time.perf_counter()
    view = make()
    html = page([view])
    return view, html, time.perf_counter() - start


def test_huge_tool_output_renders_a_small_preview_quickly() -> None:
    text = "0123456789 abcdefghij <b>\n" * (FIVE_MB // 26)
    view, html, seconds = timed(lambda: render_entry(tool_result(text)))
    (output,) = blocks_of(view, OutputBlock)
    assert output.truncated and output.full_length == len(text) and output.size_label == "5.0 MB"
    assert len(html) < 20_000 and seconds < 2
    long_line = "x" * FIVE_MB
    view, html, seconds = timed(lambda: render_entry(tool_result(long_line)))
    assert len(html) < 20_000 and seconds < 2


@pytest.mark.parametrize(
    "text",
    [
        "plain words\n" * (FIVE_MB // 12),
        "<script>alert(1)</script> " * (FIVE_MB // 26),
        "[a](http://x.example) " * (FIVE_MB // 22),
        "*a _b " * (FIVE_MB // 6),
        "[" * FIVE_MB,
    ],
    ids=["plain", "html", "links", "emphasis", "brackets"],
)
def test_huge_markdown_is_cut_and_bounded(text: str) -> None:
    view, html, seconds = timed(lambda: render_entry(message_entry({"role": "user", "content": text})))
    (block,) = view.blocks
    assert isinstance(block, TextBlock) and block.truncated and block.full_length == len(text)
    assert len(html) < 2_000_000 and seconds < 10
    assert "more characters not shown" in html
    audit(html)


def test_a_message_of_brackets_is_shown_as_plain_text_quickly() -> None:
    """markdown-it tries each "[" as a link label (200,000 took seconds); past MARKDOWN_MAX_BRACKETS the
    text is shown as written, every character of it, with a note why."""
    text = "[see <b>this</b>] " + "[" * 50_000
    view, html, seconds = timed(lambda: render_entry(message_entry({"role": "user", "content": text})))
    assert "Shown as plain text: 50,001 square brackets" in html
    assert "[see &lt;b&gt;this&lt;/b&gt;] " + "[" * 50_000 in html
    assert seconds < 1
    audit(html)
    # Fewer brackets: Markdown as usual.
    few = render_entry(message_entry({"role": "user", "content": "[a link](https://example.com) **bold**"}))
    assert "<strong>bold</strong>" in page([few]) and "Shown as plain text" not in page([few])


def test_huge_tool_arguments_are_bounded() -> None:
    content = "def f():\n    return '<x>'\n" * (FIVE_MB // 26)
    calls = assistant(
        tool_call("write", {"path": "big.py", "content": content}),
        tool_call("edit", {"path": "big.py", "oldText": content, "newText": content.replace("f", "g")}),
        tool_call("bash", {"command": "echo " + "y" * FIVE_MB}),
        tool_call("mystery", {"blob": content}),
    )
    view, html, seconds = timed(lambda: render_entry(calls))
    assert len(html) < 3_000_000 and seconds < 15
    for block in view.blocks:
        assert isinstance(block, ToolCallBlock) and block.arguments.truncated
        if block.code is not None:
            assert block.code.truncated
    audit(html)


# ---------------------------------------------------------------------------------------------------------
# Robustness: arbitrary JSON in every field never breaks rendering
# ---------------------------------------------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
BLOCK_TYPES = ["text", "thinking", "redactedThinking", "toolCall", "image", "other"]
BLOCK = st.fixed_dictionaries(
    {"type": st.sampled_from(BLOCK_TYPES)},
    optional={
        "text": JSON,
        "thinking": JSON,
        "name": st.sampled_from(["bash", "read", "write", "edit", "grep", "find", "ls", "x"]) | JSON,
        "arguments": st.dictionaries(
            st.sampled_from(["command", "path", "offset", "limit", "content", "oldText", "newText", "edits"]),
            JSON,
        )
        | JSON,
        "id": JSON,
        "data": JSON,
        "mimeType": st.sampled_from(["image/png", "image/svg+xml"]) | JSON,
    },
)
ROLES = [
    "user",
    "developer",
    "assistant",
    "toolResult",
    "bashExecution",
    "pythonExecution",
    "custom",
    "fileMention",
]
MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(ROLES) | JSON},
    optional={
        "content": st.lists(BLOCK | JSON, max_size=4) | JSON,
        "usage": JSON,
        "details": JSON,
        "stopReason": JSON,
        "errorMessage": JSON,
        "files": JSON,
        "exitCode": JSON,
        "output": JSON,
        "command": JSON,
    },
)
ENTRY_TYPES = [
    "message",
    "compaction",
    "branch_summary",
    "custom",
    "custom_message",
    "label",
    "model_change",
    "thinking_level_change",
    "mode_change",
    "session_init",
    "model_usage",
    "archive",
    "title_change",
    "nope",
]
ENTRY = st.fixed_dictionaries(
    {"type": st.sampled_from(ENTRY_TYPES), "id": JSON, "parentId": JSON, "timestamp": JSON},
    optional={
        "message": MESSAGE | JSON,
        "summary": JSON,
        "details": JSON,
        "content": JSON,
        "data": JSON,
        "label": JSON,
        "model": JSON,
        "thinkingLevel": JSON,
        "customType": JSON,
        "systemPrompt": JSON,
        "usage": JSON,
    },
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ENTRY, max_size=4))
def test_arbitrary_entries_render_without_errors(entries: list[dict[str, Any]]) -> None:
    views = render_entries(entries)
    for view in views:
        assert view.kind in KINDS
        assert not any(isinstance(b, NoticeBlock) and b.level == "error" for b in view.blocks), view
    page(views).encode("utf-8")
