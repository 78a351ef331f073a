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

// -- the virtual tree --------------------------------------------------------------------------------------
// The list stands for every visible row of the tree (data-shown rows of ROW_HEIGHT pixels, each placed at
// its data-index), and holds only the rows around the view: the rest come from the rows endpoint
// (data-rows-url) as the pane scrolls, and rows far from the view are dropped, so the page stays small at
// any tree size. The selection is an index among the visible rows, loaded or not.

const ROW_HEIGHT = 20; // px: --tree-row-height in explorer.css
const CHUNK = 100; // rows per request to the rows endpoint
const OVERSCAN = 40; // rows loaded beyond each edge of the view
const KEEP = 120; // rows kept beyond each edge of the view
const PREVIEW_MS = 120; // a selection moved by keys shows its conversation this long after the last key
const NARROW = "(max-width: 50rem)";

let view = null;
// Where the selected row sat in the pane (pixels from the top of the rows' area) before htmx replaced the
// tree: the new tree puts it there again. null: centre it (a new page, a row that was out of view).
let keepOffset = null;
let previewTimer = null;
let lastMoveAt = -Infinity; // when the keys last moved the selection (performance.now())
let selectionRequest = null;
let revealAfterLoad = false;

const column = () => document.getElementById("tree-column");
const indexOf = (row) => Number(row.dataset.index);

function loadedRows() {
  return view ? Array.from(view.list.children).filter((row) => row.matches('[role="treeitem"]')) : [];
}

function rowAt(index) {
  return view?.list.querySelector(`:scope > [data-index="${index}"]`) ?? null;
}

// The height of the sticky filter bar: rows under it are not in view.
function headerHeight() {
  return tree()?.querySelector(".tree-filter")?.offsetHeight ?? 0;
}

// The list's top in the column's scroll coordinates.
function listTop() {
  const box = column();
  return view.list.getBoundingClientRect().top - box.getBoundingClientRect().top + box.scrollTop;
}

function visibleRange() {
  const box = column();
  const top = box.scrollTop + headerHeight() - listTop();
  const bottom = box.scrollTop + box.clientHeight - listTop();
  const last = Math.max(0, view.shown - 1);
  return {
    first: Math.min(last, Math.max(0, Math.floor(top / ROW_HEIGHT))),
    last: Math.min(last, Math.max(0, Math.ceil(bottom / ROW_HEIGHT) - 1)),
  };
}

function place(row) {
  row.style.top = `${indexOf(row) * ROW_HEIGHT}px`;
}

// The keys help (a <details> in the tree, replaced with it) stays open or closed as the reader left it.
const KEYS_HELP = "arbor-tree-keys";

function restoreKeysHelp() {
  const help = tree()?.querySelector("details.tree-keys");
  if (help) {
    try {
      help.open = window.sessionStorage.getItem(KEYS_HELP) === "open";
    } catch {
      // no storage: closed
    }
  }
}

document.addEventListener(
  "toggle",
  (event) => {
    if (event.target instanceof HTMLDetailsElement && event.target.matches("#tree details.tree-keys")) {
      try {
        window.sessionStorage.setItem(KEYS_HELP, event.target.open ? "open" : "");
      } catch {
        // no storage
      }
    }
  },
  true,
);

function markSelected(row, on) {
  row.setAttribute("aria-selected", on ? "true" : "false");
  row.classList.toggle("selected", on);
  const anchor = link(row);
  if (anchor) {
    anchor.tabIndex = on ? 0 : -1;
  }
}

function setup() {
  fillLabelTimes();
  restoreKeysHelp();
  const list = tree()?.querySelector(".tree-rows");
  if (!list || !list.dataset.rowsUrl) {
    view = null;
    return;
  }
  if (view?.list === list) {
    return;
  }
  const selected = list.querySelector(':scope > [aria-selected="true"]');
  view = {
    list,
    url: list.dataset.rowsUrl,
    shown: Number(list.dataset.shown) || 0,
    total: Number(list.dataset.total) || 0,
    selectedIndex: list.dataset.selectedIndex === "" ? null : Number(list.dataset.selectedIndex),
    selectedId: selected?.dataset.entryId ?? null,
    pending: new Map(),
    viewRequest: null, // the request for the rows in view after a jump
  };
  tree().classList.add("virtual");
  list.classList.add("virtual");
  list.style.height = `${view.shown * ROW_HEIGHT}px`;
  for (const row of loadedRows()) {
    place(row);
  }
  if (view.selectedIndex !== null) {
    revealIndex(view.selectedIndex, keepOffset);
  }
  keepOffset = null;
  render();
}

// Scroll the pane so that row `index` is in view: at `offset` pixels below the filter bar when given (and in
// view), else where it is when already in view ("nearest"), else centred.
function revealIndex(index, offset = null, nearest = false) {
  const box = column();
  const header = headerHeight();
  const room = box.clientHeight - header;
  const rowTop = listTop() + index * ROW_HEIGHT;
  if (offset !== null && offset >= 0 && offset <= room - ROW_HEIGHT) {
    box.scrollTop = rowTop - header - offset;
    return;
  }
  const viewTop = box.scrollTop + header;
  const viewBottom = box.scrollTop + box.clientHeight;
  if (nearest && room > ROW_HEIGHT) {
    if (rowTop < viewTop) {
      box.scrollTop = rowTop - header;
    } else if (rowTop + ROW_HEIGHT > viewBottom) {
      box.scrollTop = rowTop + ROW_HEIGHT - box.clientHeight;
    }
    return;
  }
  if (rowTop < viewTop || rowTop + ROW_HEIGHT > viewBottom) {
    box.scrollTop = Math.max(0, rowTop - header - Math.max(0, (room - ROW_HEIGHT) / 2));
  }
}

// The selected row's place in the pane, if it is in view (kept across a swap of the tree).
function selectedOffset() {
  if (!view || view.selectedIndex === null) {
    return null;
  }
  const box = column();
  const offset = listTop() + view.selectedIndex * ROW_HEIGHT - box.scrollTop - headerHeight();
  return offset >= 0 && offset <= box.clientHeight - headerHeight() - ROW_HEIGHT ? offset : null;
}

function sliceUrl(params) {
  const url = new URL(view.url, window.location.href);
  for (const [key, value] of Object.entries(params)) {
    url.searchParams.set(key, String(value));
  }
  return url;
}

async function fetchSlice(params) {
  const current = view;
  const response = await fetch(sliceUrl(params), { credentials: "same-origin" });
  if (!response.ok) {
    throw new Error(`rows: ${response.status}`);
  }
  const html = await response.text();
  if (view !== current) {
    return null;
  }
  return new DOMParser().parseFromString(html, "text/html").querySelector("ul.tree-slice");
}

// Put a slice's rows into the list (in index order; rows already there stay).
function insert(slice) {
  const have = new Map(loadedRows().map((row) => [indexOf(row), row]));
  for (const fresh of Array.from(slice.children)) {
    const index = indexOf(fresh);
    if (have.has(index)) {
      continue;
    }
    const row = document.adoptNode(fresh);
    place(row);
    markSelected(row, index === view.selectedIndex);
    let next = null;
    for (const [other, element] of have) {
      if (other > index && (next === null || other < indexOf(next))) {
        next = element;
      }
    }
    view.list.insertBefore(row, next);
    fillLabelTimes(row);
    have.set(index, row);
    if (index === view.selectedIndex) {
      view.selectedId = row.dataset.entryId;
      if (treeHadFocus && !isEditable(document.activeElement)) {
        link(row)?.focus({ preventScroll: true });
      }
    }
  }
}

function loadChunk(chunk) {
  const current = view;
  if (current.pending.has(chunk)) {
    return current.pending.get(chunk);
  }
  const promise = fetchSlice({ start: chunk * CHUNK, count: CHUNK })
    .then((slice) => {
      if (slice && view === current) {
        insert(slice);
      }
    })
    .catch(() => {})
    .finally(() => current.pending.delete(chunk));
  current.pending.set(chunk, promise);
  return promise;
}

// Load the rows [from, to] that are missing.
function ensure(from, to) {
  const have = new Set(loadedRows().map(indexOf));
  const waits = [];
  for (let chunk = Math.floor(from / CHUNK); chunk <= Math.floor(to / CHUNK); chunk++) {
    const start = Math.max(from, chunk * CHUNK);
    const end = Math.min(to, chunk * CHUNK + CHUNK - 1);
    for (let index = start; index <= end; index++) {
      if (!have.has(index)) {
        waits.push(loadChunk(chunk));
        break;
      }
    }
  }
  return Promise.all(waits);
}

// Drop rows far from the view (never the selected or the focused one).
function prune(from, to) {
  const focused = document.activeElement?.closest?.('[role="treeitem"]');
  for (const row of loadedRows()) {
    const index = indexOf(row);
    if ((index < from || index > to) && index !== view.selectedIndex && row !== focused) {
      row.remove();
    }
  }
}

let renderQueued = false;

// The rows of the view that are missing, as one range (null: all there).
function missingRange(from, to) {
  const have = new Set(loadedRows().map(indexOf));
  let first = null;
  let last = null;
  for (let index = from; index <= to; index++) {
    if (!have.has(index)) {
      first ??= index;
      last = index;
    }
  }
  return first === null ? null : { first, last };
}

function render() {
  renderQueued = false;
  if (!view || !view.list.isConnected || view.shown === 0) {
    return;
  }
  const { first, last } = visibleRange();
  const missing = view.viewRequest ? null : missingRange(first, last);
  if (missing) {
    // A jump (the scroll bar dragged, End, a deep link): the rows in view first, in one small request; the
    // rows around them once these are in.
    const current = view;
    current.viewRequest = fetchSlice({ start: missing.first, count: missing.last - missing.first + 1 })
      .then((slice) => {
        if (slice && view === current) {
          insert(slice);
        }
      })
      .catch(() => {})
      .finally(() => {
        current.viewRequest = null;
        queueRender();
      });
    prune(first - KEEP, last + KEEP);
    return;
  }
  if (!view.viewRequest) {
    ensure(Math.max(0, first - OVERSCAN), Math.min(view.shown - 1, last + OVERSCAN));
  }
  prune(first - KEEP, last + KEEP);
}

function queueRender() {
  if (!renderQueued) {
    renderQueued = true;
    window.requestAnimationFrame(render);
  }
}

// -- selection ---------------------------------------------------------------------------------------------

function selectedRow() {
  if (view) {
    return view.selectedIndex === null ? null : rowAt(view.selectedIndex);
  }
  return rows().find((row) => row.getAttribute("aria-selected") === "true") ?? null;
}

// Select the visible row `index` (loading it when it is not there yet), scrolled into view with the keyboard.
async function selectIndex(index, preview) {
  if (!view || view.shown === 0) {
    return;
  }
  const target = Math.max(0, Math.min(view.shown - 1, index));
  const current = view;
  const before = selectedRow();
  if (target === view.selectedIndex && before) {
    // Already there (Down on the last row, Home on the first): no wrap-around, nothing to load again.
    link(before)?.focus({ preventScroll: true });
    revealIndex(target, null, true);
    return;
  }
  if (before) {
    markSelected(before, false);
  }
  view.selectedIndex = target;
  view.selectedId = null;
  treeHadFocus = true;
  revealIndex(target, null, true);
  queueRender();
  let row = rowAt(target);
  if (!row) {
    await ensure(target, target);
    if (view !== current || view.selectedIndex !== target) {
      return;
    }
    row = rowAt(target);
  }
  if (!row) {
    return;
  }
  markSelected(row, true);
  view.selectedId = row.dataset.entryId;
  link(row)?.focus({ preventScroll: true });
  if (preview) {
    schedulePreview();
  }
}

// Select an entry by id: a loaded row, else the rows around it from the server.
async function selectEntry(entryId) {
  const loaded = loadedRows().find((row) => row.dataset.entryId === entryId);
  if (loaded) {
    return selectIndex(indexOf(loaded), true);
  }
  const slice = await fetchSlice({ targetId: entryId, count: CHUNK }).catch(() => null);
  if (!slice || slice.dataset.selectedId !== entryId) {
    return;
  }
  insert(slice);
  return selectIndex(Number(slice.dataset.selectedIndex), true);
}

function select(row) {
  if (view && row.dataset.index !== undefined) {
    selectIndex(indexOf(row), false);
    return;
  }
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
function pageSize() {
  const box = column();
  if (!box) {
    return 10;
  }
  const room = Math.min(box.clientHeight, window.innerHeight) - headerHeight();
  return Math.max(1, Math.floor(room / ROW_HEIGHT) - 1);
}

function move(key) {
  if (!view) {
    return moveInList(key);
  }
  if (view.shown === 0) {
    return false;
  }
  const index = view.selectedIndex ?? -1;
  const last = view.shown - 1;
  const current = selectedRow();
  switch (key) {
    case "ArrowUp":
      selectIndex(Math.max(0, index - 1), true);
      break;
    case "ArrowDown":
      selectIndex(Math.min(last, index + 1), true);
      break;
    case "PageUp":
      selectIndex(Math.max(0, index - pageSize()), true);
      break;
    case "PageDown":
      selectIndex(Math.min(last, Math.max(0, index) + pageSize()), true);
      break;
    case "Home":
      selectIndex(0, true);
      break;
    case "End":
      selectIndex(last, true);
      break;
    case "ArrowLeft": {
      const parent = current?.dataset.parentId;
      if (parent) {
        selectEntry(parent);
      }
      break;
    }
    case "ArrowRight": {
      const id = current?.dataset.entryId;
      const child = id ? loadedRows().find((row) => row.dataset.parentId === id) : null;
      if (child) {
        selectIndex(indexOf(child), true);
      }
      break;
    }
    default:
      return false;
  }
  return true;
}

// Without the virtual list (no rows endpoint): move among the rows on the page, without wrapping around.
function moveInList(key) {
  const list = rows();
  if (list.length === 0) {
    return false;
  }
  const current = selectedRow();
  const index = current ? list.indexOf(current) : -1;
  const last = list.length - 1;
  const moves = {
    ArrowUp: () => list[Math.max(0, index - 1)],
    ArrowDown: () => list[Math.min(last, index + 1)],
    PageUp: () => list[Math.max(0, index - pageSize())],
    PageDown: () => list[Math.min(last, Math.max(0, index) + pageSize())],
    Home: () => list[0],
    End: () => list[last],
    ArrowLeft: () => list.find((row) => row.dataset.entryId === current?.dataset.parentId) ?? null,
    ArrowRight: () => list.find((row) => current && row.dataset.parentId === current.dataset.entryId) ?? null,
  };
  if (!(key in moves)) {
    return false;
  }
  const next = moves[key]();
  if (next) {
    select(next);
  }
  return true;
}

// Alt+Up / Alt+Down (oh-my-pi's turn jumps): the nearest row above / below that is a user or assistant message,
// loading the rows on the way; the selection stays when there is none (no wrapping).
const isTurn = (row) => row?.dataset.role === "user" || row?.dataset.role === "assistant";

async function jumpTurn(step) {
  if (!view) {
    const list = rows();
    const current = selectedRow();
    for (let index = (current ? list.indexOf(current) : -1) + step; index >= 0 && index < list.length; index += step) {
      if (isTurn(list[index])) {
        select(list[index]);
        break;
      }
    }
    return;
  }
  const current = view;
  const from = view.selectedIndex;
  if (from === null) {
    return;
  }
  for (let index = from + step; index >= 0 && index < current.shown; index += step) {
    let row = rowAt(index);
    if (!row) {
      await ensure(index, index);
      if (view !== current || view.selectedIndex !== from) {
        return; // the tree or the selection changed meanwhile: that wins
      }
      row = rowAt(index);
    }
    if (isTurn(row)) {
      selectIndex(index, true);
      return;
    }
  }
}

// -- label times (Shift+T, as pi's /tree) --------------------------------------------------------------------
// The rows carry <time class="label-time" datetime=…> after a label; shown when the root has show-label-times,
// written in the reader's time as pi writes them: HH:MM today, M/D HH:MM this year, else YY/M/D HH:MM.

const LABEL_TIMES = "arbor-label-times";

function labelTime(iso) {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) {
    return iso;
  }
  const now = new Date();
  const time = `${String(date.getHours()).padStart(2, "0")}:${String(date.getMinutes()).padStart(2, "0")}`;
  if (date.toDateString() === now.toDateString()) {
    return time;
  }
  const day = `${date.getMonth() + 1}/${date.getDate()}`;
  if (date.getFullYear() === now.getFullYear()) {
    return `${day} ${time}`;
  }
  return `${String(date.getFullYear()).slice(-2)}/${day} ${time}`;
}

function fillLabelTimes(root = tree()) {
  for (const element of root?.querySelectorAll("time.label-time:empty") ?? []) {
    element.textContent = labelTime(element.getAttribute("datetime"));
    element.title = `label set ${new Date(element.getAttribute("datetime")).toLocaleString()}`;
  }
}

function showLabelTimes(on) {
  document.documentElement.classList.toggle("show-label-times", on);
  try {
    window.sessionStorage.setItem(LABEL_TIMES, on ? "1" : "");
  } catch {
    // storage refused (private mode): the toggle still holds for this page
  }
  const status = document.getElementById("live-status");
  if (status) {
    status.textContent = on ? "Label times shown" : "Label times hidden";
  }
}

try {
  document.documentElement.classList.toggle("show-label-times", window.sessionStorage.getItem(LABEL_TIMES) === "1");
} catch {
  // no storage: hidden
}

// -- the conversation follows the selection ----------------------------------------------------------------

// The first key after a pause previews at once; keys that follow within PREVIEW_MS of each other (a held key)
// wait until they stop, so that only the entry the selection comes to rest on is loaded.
function schedulePreview() {
  window.clearTimeout(previewTimer);
  const now = performance.now();
  const resting = now - lastMoveAt > PREVIEW_MS;
  lastMoveAt = now;
  if (resting) {
    previewTimer = null;
    loadSelection(false);
    return;
  }
  previewTimer = window.setTimeout(() => {
    previewTimer = null;
    loadSelection(false);
  }, PREVIEW_MS);
}

// Load the selected entry as a click on its row does: the tree and, out of band, the reading pane. `push`:
// a new history entry (a click); else the address is replaced (a preview while moving with the keys). An
// answer that comes after the selection moved on is dropped.
async function loadSelection(push) {
  const row = selectedRow();
  const anchor = row && link(row);
  if (!view || !anchor) {
    return false;
  }
  const current = view;
  const entryId = row.dataset.entryId;
  selectionRequest?.abort();
  const controller = new AbortController();
  selectionRequest = controller;
  let html;
  try {
    const response = await fetch(anchor.href, {
      // Only what describes the entry: the tree the page holds stays as it is (rows, scroll, focus).
      headers: { "HX-Request": "true", "HX-Target": "selection", "HX-Current-URL": window.location.href },
      credentials: "same-origin",
      signal: controller.signal,
    });
    if (!response.ok) {
      return false;
    }
    html = await response.text();
  } catch {
    return false;
  }
  // Dropped when the selection moved on, or an inline label editor opened meanwhile (it would be replaced).
  const editing = tree()?.querySelector(`.${LABEL_EDITOR}`);
  if (view !== current || view.selectedId !== entryId || selectionRequest !== controller || editing) {
    return false;
  }
  selectionRequest = null;
  if (push) {
    window.history.pushState({ arborTree: true }, "", anchor.href);
  } else {
    window.history.replaceState({ arborTree: true }, "", anchor.href);
  }
  treeHadFocus = treeHadFocus || Boolean(tree()?.contains(document.activeElement));
  swapParts(html);
  return true;
}

// Swap in the parts of an answer that are marked out of band (the reading pane, the header, the forms that
// carry the selection), leaving the tree in place.
function swapParts(html) {
  if (window.htmx?.swap) {
    window.htmx.swap(document.body, html, { swapStyle: "none" });
    return;
  }
  const parsed = new DOMParser().parseFromString(html, "text/html");
  for (const part of Array.from(parsed.body.children)) {
    if (part.id) {
      part.removeAttribute("hx-swap-oob");
      document.getElementById(part.id)?.replaceWith(document.adoptNode(part));
    }
  }
}

// Back and Forward between selections made here: load the entry of that address again.
window.addEventListener("popstate", (event) => {
  if (!event.state?.arborTree || !tree()) {
    return;
  }
  keepOffset = null;
  fetch(window.location.href, {
    headers: { "HX-Request": "true", "HX-Target": "tree", "HX-History-Restore-Request": "false" },
    credentials: "same-origin",
  })
    .then((response) => (response.ok ? response.text() : null))
    .then((html) => html && swapTree(html))
    .catch(() => {});
});

// A click on a row selects it and loads it (the selection request, so that a later key press wins).
document.addEventListener(
  "click",
  (event) => {
    const anchor = event.target instanceof Element ? event.target.closest(".tree-rows.virtual > li > a") : null;
    if (!anchor || !view || event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) {
      return;
    }
    event.preventDefault();
    event.stopPropagation();
    const row = anchor.parentElement;
    window.clearTimeout(previewTimer);
    const before = selectedRow();
    if (before && before !== row) {
      markSelected(before, false);
    }
    view.selectedIndex = indexOf(row);
    view.selectedId = row.dataset.entryId;
    markSelected(row, true);
    revealAfterLoad = window.matchMedia(NARROW).matches;
    loadSelection(true);
  },
  true,
);

// -- live changes: the rows in view again, not the whole tree -----------------------------------------------

async function refreshRows() {
  if (!view) {
    return false;
  }
  const { first, last } = visibleRange();
  const start = Math.max(0, first - OVERSCAN);
  const count = Math.min(400, last - first + 1 + 2 * OVERSCAN);
  const params = { start, count };
  if (view.selectedId) {
    params.targetId = view.selectedId;
  }
  const slice = await fetchSlice(params).catch(() => null);
  if (!slice) {
    return true;
  }
  for (const row of loadedRows()) {
    row.remove();
  }
  view.shown = Number(slice.dataset.shown) || 0;
  view.total = Number(slice.dataset.total) || 0;
  view.list.style.height = `${view.shown * ROW_HEIGHT}px`;
  const selected = slice.dataset.selectedIndex;
  view.selectedIndex = selected === "" || selected === undefined ? null : Number(selected);
  view.selectedId = slice.dataset.selectedId || null;
  insert(slice);
  const status = tree()?.querySelector(".tree-count");
  if (status) {
    status.textContent = `${view.shown.toLocaleString("en")} of ${view.total.toLocaleString("en")} shown${slice.dataset.tag ?? ""}`;
  }
  queueRender();
  return true;
}

document.addEventListener("arbor:tree-changed", (event) => {
  if (view) {
    event.preventDefault(); // handled here: live.js does not reload the tree
    refreshRows();
    if (event.detail?.conversation) {
      refreshConversation();
    }
  }
});

// The branch on screen grew (the agent went on, a summary or a label was appended below its leaf): the
// reading pane and the header again, for the entry they show; the tree and the selection stay.
async function refreshConversation() {
  const shown = openEntryId();
  if (!shown || previewTimer !== null || selectionRequest) {
    return; // a selection is on its way: it brings the new state with it
  }
  const url = new URL(window.location.href);
  url.searchParams.set("targetId", shown);
  const response = await fetch(url, {
    headers: { "HX-Request": "true", "HX-Target": "selection", "HX-Current-URL": window.location.href },
    credentials: "same-origin",
  }).catch(() => null);
  if (!response?.ok || openEntryId() !== shown || tree()?.querySelector(`.${LABEL_EDITOR}`)) {
    return;
  }
  const pane = document.getElementById("reading-pane");
  const top = pane?.scrollTop ?? 0;
  swapParts(await response.text());
  if (pane) {
    pane.scrollTop = top; // the reader stays where they were reading
  }
}

// A filter or search kept the selected entry: the server sent the tree alone. Once the tree is painted, the
// reading pane (the same entry) comes again, for its links and forms, which carry the filter and the search.
document.addEventListener("arbor:reading-stale", () => {
  window.requestAnimationFrame(() => window.setTimeout(refreshConversation, 0));
});

// The entry the conversation pane shows (after Enter or a click on its row, or a preview).
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
    window.clearTimeout(previewTimer);
    document.dispatchEvent(new CustomEvent("arbor:navigate", { detail: { entryId: row.dataset.entryId } }));
    return true;
  }
  treeHadFocus = true;
  if (view) {
    window.clearTimeout(previewTimer);
    loadSelection(true);
    return true;
  }
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
  keepOffset = selectedOffset();
  swapTree(await response.text());
}

function editLabel() {
  const row = selectedRow();
  const form = tree()?.querySelector("form.label-form");
  const anchor = row && link(row);
  if (!row || !form || !anchor || row.querySelector(`.${LABEL_EDITOR}`)) {
    return false;
  }
  // A preview would replace the tree, and the editor with it (or bring back the label's old value).
  window.clearTimeout(previewTimer);
  selectionRequest?.abort();
  selectionRequest = null;
  const input = document.createElement("input");
  input.type = "text";
  input.className = LABEL_EDITOR;
  input.maxLength = 500;
  // The row stays in sight next to the editor, so one sees which entry the label goes on.
  const text = row.querySelector(".tree-text")?.textContent ?? "";
  input.setAttribute("aria-label", `Label of the selected entry: ${text.slice(0, 80)}`);
  input.placeholder = "label (empty clears it)";
  // textContent and value, never HTML: a label is hostile input like any other session content.
  input.value = row.querySelector(".label-chip")?.textContent ?? "";
  row.classList.add("editing");
  anchor.tabIndex = -1;
  row.append(input);
  const cancel = () => {
    input.remove();
    row.classList.remove("editing");
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
  } else if (
    event.altKey &&
    !event.ctrlKey &&
    !event.metaKey &&
    !event.shiftKey &&
    (key === "ArrowUp" || key === "ArrowDown") &&
    !editing &&
    inPane
  ) {
    window.clearTimeout(previewTimer);
    jumpTurn(key === "ArrowUp" ? -1 : 1);
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
    // From the rows (the search box types its own "L"), whatever the search box holds.
    handled = editLabel();
  } else if (key === "T" && event.shiftKey && !inSearch) {
    showLabelTimes(!document.documentElement.classList.contains("show-label-times"));
    fillLabelTimes();
    handled = true;
  } else if (key === "Enter" && event.shiftKey && (onPage || focusedRow)) {
    // oh-my-pi's Shift+Enter: move the leaf to the selected row and summarize the branch left, without asking.
    if (focusedRow && focusedRow !== selectedRow()) {
      select(focusedRow);
    }
    const row = selectedRow();
    if (row) {
      window.clearTimeout(previewTimer);
      document.dispatchEvent(
        new CustomEvent("arbor:navigate", { detail: { entryId: row.dataset.entryId, summarize: true } }),
      );
      handled = true;
    }
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

// htmx is about to replace the tree (a filter, a search, a navigation): the selected row stays where it is
// in the pane if it was in view, and comes into view if it was not.
document.addEventListener("htmx:beforeSwap", (event) => {
  if (event.detail?.target?.id === "tree" && keepOffset === null) {
    keepOffset = selectedOffset();
  }
});

document.addEventListener("htmx:afterSettle", () => {
  setup();
  if (revealAfterLoad) {
    // A tap on a phone: the conversation sits below the tree, so it comes into view.
    revealAfterLoad = false;
    document.querySelector("#conversation article.entry.selected")?.scrollIntoView({ block: "start" });
  }
  if (!treeHadFocus || isEditable(document.activeElement)) {
    return;
  }
  const row = selectedRow();
  const anchor = row && link(row);
  if (anchor) {
    anchor.focus({ preventScroll: true });
    if (!view) {
      anchor.scrollIntoView({ block: "nearest" });
    }
  }
});

document.addEventListener("htmx:historyRestore", () => {
  keepOffset = null;
  setup();
});

// Scrolling the pane loads the rows coming into view (scroll events do not bubble: caught on the way down).
document.addEventListener(
  "scroll",
  (event) => {
    if (view && event.target instanceof Element && event.target.id === "tree-column") {
      queueRender();
    }
  },
  true,
);
window.addEventListener("resize", queueRender);

setup();
