"""Real-browser tests of the conversation's display and what hangs off it: the thinking and tool-output
toggles (buttons and keys), the image modal, commenting on a selection with the quoted range highlighted, and
a fork's resume hint (Playwright + Chromium on a live daphne)."""

from __future__ import annotations

import base64
import json
import re
import shutil
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser import BROWSER_MARKS, live_server
from tests.reference import DATA

pytestmark = BROWSER_MARKS

SID = "0196b4f0-6c2e-7a31-9f0e-3c5d2a1b4e77"
IMAGE_SID = "0196b4f9-0000-7000-8000-00000000abcd"


def _png(width: int = 120, height: int = 80) -> bytes:
    rows = b"".join(b"\x00" + bytes([200, 60, 60]) * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def _image_session(path: Path) -> None:
    """A short session: a user message with a picture, thinking, a tool call and its output, an answer."""

    def at(second: int) -> str:
        return f"2026-05-02T10:00:{second:02d}.000Z"

    image = {"type": "image", "data": base64.b64encode(_png()).decode(), "mimeType": "image/png"}
    lines = [
        {"type": "session", "version": 3, "id": IMAGE_SID, "timestamp": at(0), "cwd": "/home/dev/img"},
        {
            "type": "message",
            "id": "u1",
            "parentId": None,
            "timestamp": at(1),
            "message": {"role": "user", "content": [{"type": "text", "text": "What is in it?"}, image]},
        },
        {
            "type": "message",
            "id": "a1",
            "parentId": "u1",
            "timestamp": at(2),
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "A red rectangle. Let me read the notes too."},
                    {"type": "toolCall", "id": "call1", "name": "read", "arguments": {"path": "notes.txt"}},
                ],
                "stopReason": "toolUse",
            },
        },
        {
            "type": "message",
            "id": "t1",
            "parentId": "a1",
            "timestamp": at(3),
            "message": {
                "role": "toolResult",
                "toolCallId": "call1",
                "toolName": "read",
                "content": [{"type": "text", "text": "line one of the notes"}],
                "isError": False,
            },
        },
        {
            "type": "message",
            "id": "a2",
            "parentId": "t1",
            "timestamp": at(4),
            "message": {"role": "assistant", "content": [{"type": "text", "text": "A red rectangle."}]},
        },
    ]
    path.write_text("".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("conversation-browser")
    sessions = root / "sessions"
    sessions.mkdir()
    shutil.copyfile(DATA / "handmade" / "v3_branching_labels.jsonl", sessions / "v3_branching_labels.jsonl")
    _image_session(sessions / "image.jsonl")
    with live_server(root, sessions) as url:
        yield url


def test_the_toggles_expand_thinking_and_hide_tool_output(page: Page, server: str) -> None:
    page.goto(f"{server}/s/{IMAGE_SID}/?targetId=a1")
    thinking = page.locator("#conversation details.block-thinking")
    output = page.locator('#conversation article[data-entry-id="t1"] .block-output')
    expect(thinking).not_to_have_attribute("open", "")
    expect(output).to_be_visible()
    page.locator('.conversation-toolbar [data-toggle="thinking"]').click()
    expect(thinking).to_have_attribute("open", "")
    expect(page.locator('[data-toggle="thinking"]')).to_have_attribute("aria-pressed", "true")
    # The key as in pi's export (the page has the keyboard, not a text box).
    page.locator("h1").click()
    page.keyboard.press("o")
    expect(output).to_be_hidden()
    expect(page.locator('[data-toggle="tools"]')).to_have_attribute("aria-pressed", "false")
    # Another selection swaps the conversation in: the toggles still hold, and after a reload too.
    page.locator('#tree [role="treeitem"][data-entry-id="u1"] a').click()
    expect(page.locator('#conversation article.selected[data-entry-id="u1"]')).to_be_visible()
    expect(thinking).to_have_attribute("open", "")
    expect(output).to_be_hidden()
    page.reload()
    expect(output).to_be_hidden()
    page.keyboard.press("t")
    page.keyboard.press("o")
    expect(thinking).not_to_have_attribute("open", "")
    expect(output).to_be_visible()


def test_an_image_opens_in_a_modal_that_escape_closes(page: Page, server: str) -> None:
    page.goto(f"{server}/s/{IMAGE_SID}/?targetId=u1")
    image = page.locator("#conversation img.block-image")
    image.click()
    modal = page.locator("#image-modal")
    expect(modal).to_be_visible()
    src = image.get_attribute("src")
    expect(modal.locator("img")).to_have_attribute("src", src or "")
    page.keyboard.press("Escape")
    expect(modal).to_be_hidden()
    expect(image).to_be_focused()
    # From the keyboard too.
    page.keyboard.press("Enter")
    expect(modal).to_be_visible()
    modal.locator("button").click()
    expect(modal).to_be_hidden()


def test_a_comment_on_a_selection_highlights_the_quoted_range(page: Page, server: str) -> None:
    page.goto(f"{server}/s/{SID}/?targetId=b2000006")
    floating = page.locator("#comment-at-selection")
    page.evaluate(
        """() => {
            const block = document.querySelector('#conversation article.entry.selected .block-text');
            const walker = document.createTreeWalker(block, NodeFilter.SHOW_TEXT);
            for (let node = walker.nextNode(); node; node = walker.nextNode()) {
                const at = node.data.indexOf('subcommands');
                if (at >= 0) {
                    const range = document.createRange();
                    range.setStart(node, at);
                    range.setEnd(node, at + 'subcommands'.length);
                    window.getSelection().removeAllRanges();
                    window.getSelection().addRange(range);
                    return;
                }
            }
            throw new Error('text not found');
        }"""
    )
    # The button sits at the selection, inside the window.
    expect(floating).to_be_visible()
    box = floating.bounding_box()
    assert box is not None and 0 <= box["y"] <= 900 - box["height"]
    floating.click()
    expect(page.locator("#comments [data-comment-quote]")).to_have_value("subcommands")
    expect(page.locator("#comment-body-new")).to_be_focused()
    page.keyboard.type("Name them after the verbs.")
    page.locator("#comments").get_by_role("button", name="Comment", exact=True).click()
    expect(page.locator("#comments .comment-thread .comment-quote")).to_have_text("subcommands")
    mark = page.locator("#conversation article.entry.selected .block-text mark.comment-highlight")
    expect(mark).to_have_text("subcommands")
    # Still there after the page is opened again.
    page.reload()
    expect(mark).to_have_text("subcommands")


def test_a_fork_says_where_its_file_is_and_how_to_resume_it(page: Page, server: str) -> None:
    page.goto(f"{server}/s/{SID}/branch-picker/")
    page.locator('form:has(input[name="entry_id"][value="b2000003"]) button[type="submit"]').click()
    expect(page.locator("h1")).to_have_text("Fork of Write a CLI argument parser in Python.")
    hint = page.locator(".fork-hint")
    expect(hint).to_contain_text("Write-back is off")
    command = page.locator("#resume-command")
    expect(command).to_have_text(re.compile(r"^omp --resume \S+/forks/\S+\.jsonl$"))
    expect(hint.get_by_role("link", name="download it")).to_be_visible()
