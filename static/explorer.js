// Keyboard for the session page's tree pane: move the selection, open entries, switch filters, clear the
// search and edit labels inline. htmx replaces #tree on every answer, so everything is looked up again at
// each key press and the listeners sit on the document.

// Alt+C: Arbor's "commented" filter (entries with comments), after the agent's five.
const FILTER_KEYS = { d: "default", t: "no-tools", u: "user-only", l: "labeled-only", a: "all", c: "commented" };
const LABEL_EDITOR = "label-editor";

const tree = () => document.getElementById("tree");
const search = () => document.getElementById("tree-search");
const filterSelect = () => document.getElementById("tree-filter-mode");
const rows = () => Array.from(tree()?.querySelectorAll('.tree-rows > [role="treeitem"]') ?? []);
const link = (row) => row.querySelector("a[href]");

// Whether the tree had the keyboard when htmx replaced it: then the new selected row gets the focus back.
let treeHadFocus = false;

const isEditable = (element) =>
  element instanceof HTMLElement &&
  (element.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(element.tagName));

function selectedRow() {
  return rows().find((row) => row.getAttribute("aria-selected") === "true") ?? null;
}

function select(row) {
  for (const other of rows()) {
    const on = other === row;
    other.setAttribute("aria-selected", on ? "true" : "false");
    other.classList.toggle("selected", on);
  }
  const anchor = link(row);
  if (anchor) {
    anchor.focus();
    anchor.scrollIntoView({ block: "nearest" });
  }
  treeHadFocus = true;
}

// How many rows fit in the tree pane's visible height (at least one).
function pageSize(list) {
  const pane = tree();
  const height = list[0]?.getBoundingClientRect().height || 0;
  if (!pane || height <= 0) {
    return 10;
  }
  const visible = Math.min(pane.clientHeight || window.innerHeight, window.innerHeight);
  return Math.max(1, Math.floor(visible / height) - 1);
}

function move(key) {
  const list = rows();
  if (list.length === 0) {
    return false;
  }
  const current = selectedRow();
  const index = current ? list.indexOf(current) : -1;
  const last = list.length - 1;
  let next = null;
  switch (key) {
    case "ArrowUp":
      next = list[index <= 0 ? last : index - 1];
      break;
    case "ArrowDown":
      next = list[index < 0 || index >= last ? 0 : index + 1];
      break;
    case "PageUp":
      next = list[Math.max(0, index - pageSize(list))];
      break;
    case "PageDown":
      next = list[Math.min(last, Math.max(0, index) + pageSize(list))];
      break;
    case "Home":
      next = list[0];
      break;
    case "End":
      next = list[last];
      break;
    case "ArrowLeft": {
      const parent = current?.dataset.parentId;
      next = parent ? (list.find((row) => row.dataset.entryId === parent) ?? null) : null;
      break;
    }
    case "ArrowRight": {
      const id = current?.dataset.entryId;
      next = id ? (list.find((row) => row.dataset.parentId === id) ?? null) : null;
      break;
    }
    default:
      return false;
  }
  if (next) {
    select(next);
  }
  return true;
}

// The entry the conversation pane shows (after Enter or a click on its row).
function openEntryId() {
  return document.querySelector("#conversation article.entry.selected")?.dataset.entryId ?? null;
}

function open() {
  const row = selectedRow();
  const anchor = row && link(row);
  if (!anchor) {
    return false;
  }
  if (row.dataset.entryId === openEntryId() && document.getElementById("navigator")) {
    // Enter on the entry already open: move the leaf there (/tree); navigate.js asks how.
    document.dispatchEvent(new CustomEvent("arbor:navigate", { detail: { entryId: row.dataset.entryId } }));
    return true;
  }
  treeHadFocus = true;
  // A click lets htmx take it (hx-get, hx-push-url); without htmx the browser follows the href.
  anchor.click();
  return true;
}

function setFilter(mode) {
  const field = filterSelect();
  if (!field || field.value === mode) {
    return;
  }
  field.value = mode;
  if (window.htmx) {
    field.dispatchEvent(new Event("change", { bubbles: true }));
  } else {
    field.form?.requestSubmit();
  }
}

function cycleFilter(step) {
  const field = filterSelect();
  if (!field) {
    return;
  }
  const modes = Array.from(field.options, (option) => option.value);
  const index = modes.indexOf(field.value);
  setFilter(modes[(index + step + modes.length) % modes.length]);
}

function clearSearch() {
  const box = search();
  if (!box || box.value === "") {
    return false;
  }
  box.value = "";
  // The same event the browser fires when the search box's own clear button is used (an hx-trigger).
  box.dispatchEvent(new Event("search", { bubbles: true }));
  if (!window.htmx) {
    box.form?.requestSubmit();
  }
  return true;
}

// The CSRF token htmx sends, from the hx-headers attribute on <body>.
function csrfHeaders() {
  try {
    return JSON.parse(document.body.getAttribute("hx-headers") || "{}");
  } catch {
    return {};
  }
}

function swapTree(html) {
  const current = tree();
  if (!current) {
    return;
  }
  if (window.htmx?.swap) {
    window.htmx.swap(current, html, { swapStyle: "outerHTML" });
    return;
  }
  const parsed = new DOMParser().parseFromString(html, "text/html").getElementById("tree");
  if (parsed) {
    current.replaceWith(document.adoptNode(parsed));
  }
}

async function saveLabel(row, input, form) {
  const body = new URLSearchParams();
  body.set("target_id", row.dataset.entryId);
  body.set("label", input.value);
  for (const name of ["filter", "q", "leafId", "tab"]) {
    const field = form.elements.namedItem(name);
    body.set(name, field ? field.value : "");
  }
  input.disabled = true;
  const response = await fetch(form.action, {
    method: "POST",
    headers: { ...csrfHeaders(), "HX-Request": "true", "HX-Target": "tree" },
    body,
    credentials: "same-origin",
  });
  if (!response.ok) {
    input.disabled = false;
    input.setAttribute("aria-invalid", "true");
    input.title = (await response.text()).slice(0, 300) || `Label not saved (${response.status})`;
    input.focus();
    return;
  }
  treeHadFocus = true;
  swapTree(await response.text());
}

function editLabel() {
  const row = selectedRow();
  const form = tree()?.querySelector("form.label-form");
  const anchor = row && link(row);
  if (!row || !form || !anchor || row.querySelector(`.${LABEL_EDITOR}`)) {
    return false;
  }
  const input = document.createElement("input");
  input.type = "text";
  input.className = LABEL_EDITOR;
  input.maxLength = 500;
  input.setAttribute("aria-label", "Label of the selected entry");
  // textContent and value, never HTML: a label is hostile input like any other session content.
  input.value = row.querySelector(".label-chip")?.textContent ?? "";
  anchor.hidden = true;
  row.append(input);
  const cancel = () => {
    input.remove();
    anchor.hidden = false;
    select(row);
  };
  input.addEventListener("keydown", (event) => {
    event.stopPropagation();
    if (event.key === "Enter") {
      event.preventDefault();
      saveLabel(row, input, form).catch(() => {
        input.disabled = false;
        input.setAttribute("aria-invalid", "true");
      });
    } else if (event.key === "Escape") {
      event.preventDefault();
      cancel();
    }
  });
  input.focus();
  input.select();
  return true;
}

// Two Escapes within this time, neither handled by anything else, are a double Escape (§18).
const DOUBLE_ESCAPE_MS = 500;
let lastEscape = -Infinity;

function escapePressed() {
  const now = performance.now();
  if (now - lastEscape <= DOUBLE_ESCAPE_MS) {
    lastEscape = -Infinity;
    document.dispatchEvent(new CustomEvent("arbor:double-escape"));
    return true;
  }
  lastEscape = now;
  return false;
}

function onKeyDown(event) {
  // A modal dialog (the navigator, the branch picker) handles its own keys.
  if (event.defaultPrevented || event.isComposing || !tree() || document.querySelector("dialog[open]")) {
    return;
  }
  const key = event.key;
  const lower = key.length === 1 ? key.toLowerCase() : key;
  const target = event.target;
  const inSearch = target === search();
  const editing = isEditable(target) && !inSearch;
  const onPage = target === document.body || target === document.documentElement;
  // Links and buttons elsewhere (the conversation, "load later") keep their own keys.
  const inPane = onPage || (target instanceof Node && tree().contains(target));
  const focusedRow = target instanceof Element ? target.closest('.tree-rows > [role="treeitem"]') : null;
  let handled = false;

  if (event.altKey && !event.ctrlKey && !event.metaKey && !event.shiftKey && FILTER_KEYS[lower]) {
    // event.code too: on macOS Option+letter types a different character.
    setFilter(FILTER_KEYS[lower]);
    handled = true;
  } else if (event.altKey && !event.ctrlKey && !event.metaKey && /^Key[DTULAC]$/.test(event.code)) {
    setFilter(FILTER_KEYS[event.code.slice(3).toLowerCase()]);
    handled = true;
  } else if (event.ctrlKey && !event.altKey && !event.metaKey && lower === "o") {
    cycleFilter(event.shiftKey ? -1 : 1);
    handled = true;
  } else if (key === "Escape" && !editing) {
    handled = clearSearch() || escapePressed();
  } else if (key === "/" && !editing && !inSearch && !event.altKey && !event.ctrlKey && !event.metaKey) {
    const command = document.getElementById("command-input");
    if (command) {
      command.focus();
      handled = true;
    }
  } else if (editing || !inPane || event.altKey || event.ctrlKey || event.metaKey) {
    return;
  } else if (key === "L" && event.shiftKey && !inSearch) {
    handled = search()?.value === "" && editLabel();
  } else if (key === "Enter" && (onPage || focusedRow)) {
    if (focusedRow && focusedRow !== selectedRow()) {
      select(focusedRow);
    }
    handled = open();
  } else if (["ArrowUp", "ArrowDown", "PageUp", "PageDown"].includes(key)) {
    handled = move(key);
  } else if (!inSearch && ["Home", "End", "ArrowLeft", "ArrowRight"].includes(key)) {
    handled = move(key);
  }
  if (handled) {
    event.preventDefault();
  }
}

document.addEventListener("keydown", onKeyDown);

// Focus leaving the tree for elsewhere (a click in the conversation) stops the refocus after swaps.
document.addEventListener("focusin", (event) => {
  const pane = tree();
  treeHadFocus = Boolean(pane && event.target instanceof Node && pane.contains(event.target));
});

document.addEventListener("htmx:afterSettle", () => {
  if (!treeHadFocus || isEditable(document.activeElement)) {
    return;
  }
  const row = selectedRow();
  const anchor = row && link(row);
  if (anchor) {
    anchor.focus({ preventScroll: false });
    anchor.scrollIntoView({ block: "nearest" });
  }
});
