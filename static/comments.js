// Comments on the session page: a text selection inside the selected entry's rendered text offers "Comment on
// selection", which puts the quote (and its offset in the entry's text) into the new-comment form; after htmx
// swaps the comment panel in, the selected tree row's badge follows its counts. Without JavaScript the form
// comments on the whole entry. htmx replaces the conversation and the panel, so everything is looked up again
// on each event and the listeners sit on the document.

// Where a selection can be quoted from: the selected entry's text blocks (not its comments or forms).
const QUOTABLE = ".block-text, .block-output, .block-thinking, .block-code";
const QUOTE_MAX = 5000;

const entry = () => document.querySelector("#conversation article.entry.selected");
const panel = () => document.getElementById("comments");
const newForm = () => panel()?.querySelector("form.comment-new") ?? null;

// The current selection when it lies inside one quotable block of the selected entry, else null.
function quotableRange() {
  const selection = window.getSelection();
  const article = entry();
  if (!selection || selection.isCollapsed || selection.rangeCount === 0 || !article) {
    return null;
  }
  const range = selection.getRangeAt(0);
  const node = range.commonAncestorContainer;
  const element = node instanceof Element ? node : node.parentElement;
  const block = element?.closest(QUOTABLE);
  if (!block || !article.contains(block) || block.closest("#comments")) {
    return null;
  }
  const text = range.toString().trim();
  return text ? { range, text } : null;
}

// The quote's offset in the entry's plain text (its quotable blocks, one after the other), or "" when the
// selected text cannot be found there as it is.
function quoteStart(range, text) {
  const article = entry();
  let offset = 0;
  for (const block of article?.querySelectorAll(QUOTABLE) ?? []) {
    if (block.closest("#comments")) {
      continue;
    }
    if (block.contains(range.startContainer)) {
      const before = document.createRange();
      before.setStart(block, 0);
      before.setEnd(range.startContainer, range.startOffset);
      const blockText = block.textContent ?? "";
      let at = before.toString().length;
      // Skip what trim() dropped from the front of the selection.
      const matches = (index) => blockText.slice(index, index + text.length) === text;
      while (at < blockText.length && !matches(at) && /\s/.test(blockText[at])) {
        at += 1;
      }
      if (matches(at)) {
        return String(offset + at);
      }
      const found = blockText.indexOf(text);
      return found >= 0 ? String(offset + found) : "";
    }
    offset += (block.textContent ?? "").length;
  }
  return "";
}

function showQuote(form, text, start) {
  form.querySelector("[data-comment-quote]").value = text;
  form.querySelector("[data-comment-quote-start]").value = start;
  const preview = form.querySelector("[data-comment-quote-preview]");
  preview.textContent = text;
  preview.hidden = text === "";
  form.querySelector("[data-comment-quote-clear]").hidden = text === "";
}

// The button shows while a quotable selection exists (checked as the selection changes).
let pending = 0;
document.addEventListener("selectionchange", () => {
  window.cancelAnimationFrame(pending);
  pending = window.requestAnimationFrame(() => {
    const button = newForm()?.querySelector("[data-comment-selection]");
    if (button) {
      button.hidden = quotableRange() === null;
    }
  });
});

// Keep the selection when the button is pressed (a mousedown elsewhere would clear it first).
document.addEventListener("mousedown", (event) => {
  if (event.target instanceof Element && event.target.closest("[data-comment-selection]")) {
    event.preventDefault();
  }
});

document.addEventListener("click", (event) => {
  const target = event.target instanceof Element ? event.target : null;
  const form = newForm();
  if (!target || !form) {
    return;
  }
  if (target.closest("[data-comment-selection]")) {
    const found = quotableRange();
    if (!found) {
      return;
    }
    const text = found.text.slice(0, QUOTE_MAX);
    showQuote(form, text, quoteStart(found.range, text));
    target.closest("[data-comment-selection]").hidden = true;
    form.querySelector("textarea[name=body]")?.focus();
  } else if (target.closest("[data-comment-quote-clear]")) {
    showQuote(form, "", "");
  }
});

// After the panel is swapped in: the selected entry's tree row shows its new counts.
document.addEventListener("htmx:afterSwap", () => {
  const section = panel();
  const entryId = section?.dataset.commentsEntry;
  if (!section || !entryId) {
    return;
  }
  const row = Array.from(document.querySelectorAll('#tree .tree-rows > [role="treeitem"]')).find(
    (item) => item.dataset.entryId === entryId,
  );
  const anchor = row?.querySelector("a");
  if (!anchor) {
    return;
  }
  const count = Number(section.dataset.comments || 0);
  const open = Number(section.dataset.openThreads || 0);
  let badge = anchor.querySelector(".comment-count");
  if (count === 0) {
    badge?.remove();
    return;
  }
  if (!badge) {
    badge = document.createElement("span");
    badge.className = "comment-count";
    const text = anchor.querySelector(".tree-text");
    text?.after(badge);
    text?.after(document.createTextNode(" "));
  }
  badge.classList.toggle("comment-count-open", open > 0);
  badge.textContent = `💬 ${count}`;
  badge.title = `${count} comment${count === 1 ? "" : "s"}, ${open} open thread${open === 1 ? "" : "s"}`;
});
