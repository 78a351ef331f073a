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

// A "Comment" button floating at the selection, so the reader need not scroll to the form below the entry.
function floatingButton() {
  let button = document.getElementById("comment-at-selection");
  if (!button) {
    button = document.createElement("button");
    button.type = "button";
    button.id = "comment-at-selection";
    button.className = "comment-at-selection";
    button.dataset.commentSelection = "";
    button.textContent = "💬 Comment";
    button.title = "Comment on the selected text";
    button.hidden = true;
    document.body.append(button);
  }
  return button;
}

function placeFloating(found) {
  const button = floatingButton();
  if (!found || !newForm()) {
    button.hidden = true;
    return;
  }
  // Just above the end of the selection (below it when there is no room), inside the window.
  const rects = found.range.getClientRects();
  const last = rects[rects.length - 1] ?? found.range.getBoundingClientRect();
  button.hidden = false;
  const width = button.offsetWidth;
  const height = button.offsetHeight;
  const left = Math.min(Math.max(4, last.right - width / 2), window.innerWidth - width - 4);
  const top = last.top - height - 6 >= 4 ? last.top - height - 6 : last.bottom + 6;
  button.style.left = `${left + window.scrollX}px`;
  button.style.top = `${top + window.scrollY}px`;
}

// The buttons show while a quotable selection exists (checked as the selection changes).
let pending = 0;
document.addEventListener("selectionchange", () => {
  window.cancelAnimationFrame(pending);
  pending = window.requestAnimationFrame(() => {
    const found = quotableRange();
    const button = newForm()?.querySelector("[data-comment-selection]");
    if (button) {
      button.hidden = found === null;
    }
    placeFloating(found);
  });
});

// The selection moves with the reading pane when it scrolls: the floating button goes until the next one.
document.addEventListener(
  "scroll",
  () => {
    const button = document.getElementById("comment-at-selection");
    if (button && !button.hidden) {
      placeFloating(quotableRange());
    }
  },
  true,
);

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
    for (const button of document.querySelectorAll("[data-comment-selection]")) {
      button.hidden = true;
    }
    const body = form.querySelector("textarea[name=body]");
    body?.scrollIntoView({ block: "center" });
    body?.focus({ preventScroll: true });
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

// -- quoted ranges highlighted in the entry's text ------------------------------------------------------------

// The text nodes of the selected entry's quotable blocks, with their offsets in the entry's plain text (the
// blocks one after the other, as quoteStart counts them).
function textNodes(article) {
  const nodes = [];
  let offset = 0;
  for (const block of article.querySelectorAll(QUOTABLE)) {
    if (block.closest("#comments")) {
      continue;
    }
    const walker = document.createTreeWalker(block, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      nodes.push({ node, start: offset });
      offset += node.data.length;
    }
  }
  return nodes;
}

// Where a quote is: at its recorded offset when the text there is the quote, else its first occurrence.
function quoteOffset(nodes, quote, recorded) {
  const text = nodes.map((item) => item.node.data).join("");
  if (Number.isInteger(recorded) && text.slice(recorded, recorded + quote.length) === quote) {
    return recorded;
  }
  const found = text.indexOf(quote);
  return found >= 0 ? found : null;
}

function highlight(article, quote, recorded, thread) {
  const nodes = textNodes(article);
  const start = quoteOffset(nodes, quote, recorded);
  if (start === null) {
    return;
  }
  const end = start + quote.length;
  for (const { node, start: at } of nodes) {
    const from = Math.max(start, at);
    const to = Math.min(end, at + node.data.length);
    if (from >= to || !node.data.slice(from - at, to - at).trim()) {
      continue;
    }
    const range = document.createRange();
    range.setStart(node, from - at);
    range.setEnd(node, to - at);
    const mark = document.createElement("mark");
    mark.className = "comment-highlight";
    mark.dataset.thread = thread;
    mark.title = "Commented: see the thread below";
    range.surroundContents(mark);
  }
}

function highlightQuotes() {
  const article = entry();
  if (!article) {
    return;
  }
  for (const mark of article.querySelectorAll("mark.comment-highlight")) {
    mark.replaceWith(...mark.childNodes);
  }
  article.normalize();
  for (const quote of article.querySelectorAll("#comments blockquote.comment-quote[data-quote]")) {
    const text = quote.dataset.quote;
    const recorded = quote.dataset.quoteStart === "" ? null : Number(quote.dataset.quoteStart);
    if (text) {
      highlight(article, text, recorded, quote.dataset.thread);
    }
  }
}

// A highlight leads to its thread.
document.addEventListener("click", (event) => {
  const mark = event.target instanceof Element ? event.target.closest("mark.comment-highlight") : null;
  const thread = mark ? document.getElementById(mark.dataset.thread) : null;
  thread?.scrollIntoView({ block: "nearest" });
});

document.addEventListener("htmx:afterSettle", highlightQuotes);
highlightQuotes();
