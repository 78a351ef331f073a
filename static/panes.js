// The session page's panes: the handle between the tree and the reading pane (drag it, or focus it and use
// the arrow keys; double-click or Enter resets; the width is kept in localStorage and applied early by
// theme.js), arrow keys on the Conversation/Context tabs, the tree as a single tab stop, and the selected
// entry scrolled into view after a selection. htmx replaces the panes' contents: they are looked up anew.

const WIDTH_KEY = "arbor-tree-width";
const MIN = 15;
const MAX = 75;
const DEFAULT = 38;
const STEP = 2;
const BIG_STEP = 10;

const root = document.documentElement;
const byId = (id) => document.getElementById(id);

function store(value) {
  try {
    if (value === null) {
      window.localStorage.removeItem(WIDTH_KEY);
    } else {
      window.localStorage.setItem(WIDTH_KEY, String(value));
    }
  } catch {
    // storage disabled: the width lasts as long as the page
  }
}

// The tree column's width in percent of the explorer (what --tree-width says, else the stylesheet's default).
function currentWidth() {
  const value = Number.parseFloat(root.style.getPropertyValue("--tree-width"));
  return Number.isFinite(value) ? value : DEFAULT;
}

function describe(handle, percent) {
  const rounded = Math.round(percent);
  handle.setAttribute("aria-valuenow", String(rounded));
  handle.setAttribute("aria-valuetext", `tree pane ${rounded}% wide`);
}

function setWidth(handle, percent, save) {
  const clamped = Math.round(Math.min(MAX, Math.max(MIN, percent)) * 10) / 10;
  root.style.setProperty("--tree-width", `${clamped}%`);
  describe(handle, clamped);
  if (save) {
    store(clamped);
  }
}

function resetWidth(handle) {
  root.style.removeProperty("--tree-width");
  describe(handle, DEFAULT);
  store(null);
}

function wireHandle() {
  const handle = byId("pane-handle");
  const explorer = byId("explorer");
  if (!handle || !explorer) {
    return;
  }
  let dragging = false;
  const widthAt = (clientX) => {
    const box = explorer.getBoundingClientRect();
    return box.width > 0 ? ((clientX - box.left) / box.width) * 100 : currentWidth();
  };
  handle.addEventListener("pointerdown", (event) => {
    if (event.button !== 0) {
      return;
    }
    event.preventDefault();
    dragging = true;
    handle.setPointerCapture(event.pointerId);
    explorer.classList.add("resizing");
    handle.focus({ preventScroll: true });
  });
  handle.addEventListener("pointermove", (event) => {
    if (dragging) {
      setWidth(handle, widthAt(event.clientX), false);
    }
  });
  const stop = () => {
    if (dragging) {
      dragging = false;
      explorer.classList.remove("resizing");
      store(currentWidth());
    }
  };
  handle.addEventListener("pointerup", stop);
  handle.addEventListener("pointercancel", stop);
  handle.addEventListener("lostpointercapture", stop);
  handle.addEventListener("dblclick", () => resetWidth(handle));
  handle.addEventListener("keydown", (event) => {
    const step = event.shiftKey ? BIG_STEP : STEP;
    const moves = {
      ArrowLeft: () => currentWidth() - step,
      ArrowRight: () => currentWidth() + step,
      Home: () => MIN,
      End: () => MAX,
    };
    if (event.key in moves && !event.altKey && !event.ctrlKey && !event.metaKey) {
      event.preventDefault();
      setWidth(handle, moves[event.key](), true);
    } else if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      resetWidth(handle);
    }
  });
  describe(handle, currentWidth());
  handle.hidden = false;
}

// -- tabs: Left/Right/Home/End move between them, Space opens one (they are links: Enter opens them) ------

document.addEventListener("keydown", (event) => {
  const tab = event.target instanceof Element ? event.target.closest('[role="tab"]') : null;
  if (!tab || event.altKey || event.ctrlKey || event.metaKey) {
    return;
  }
  const tabs = Array.from(tab.closest('[role="tablist"]')?.querySelectorAll('[role="tab"]') ?? []);
  const index = tabs.indexOf(tab);
  let next = null;
  if (event.key === "ArrowLeft") {
    next = tabs[(index - 1 + tabs.length) % tabs.length];
  } else if (event.key === "ArrowRight") {
    next = tabs[(index + 1) % tabs.length];
  } else if (event.key === "Home") {
    next = tabs[0];
  } else if (event.key === "End") {
    next = tabs[tabs.length - 1];
  } else if (event.key === " ") {
    event.preventDefault();
    tab.click();
    return;
  }
  if (next) {
    event.preventDefault();
    next.focus();
  }
});

// -- the tree is one tab stop: Tab lands on the selected row, the arrow keys (explorer.js) do the rest ----

const ROW_LINK = '#tree .tree-rows > [role="treeitem"] > a';

function rowLinks() {
  return Array.from(document.querySelectorAll(ROW_LINK));
}

function rovingTree() {
  const links = rowLinks();
  const selected =
    document.querySelector('#tree .tree-rows > [role="treeitem"][aria-selected="true"] > a') ?? links[0];
  for (const link of links) {
    link.tabIndex = link === selected ? 0 : -1;
  }
}

document.addEventListener("focusin", (event) => {
  const link = event.target instanceof Element ? event.target.closest(ROW_LINK) : null;
  if (link && link.tabIndex !== 0) {
    for (const other of rowLinks()) {
      other.tabIndex = other === link ? 0 : -1;
    }
  }
});

// -- the selected entry in view after a selection (in the reading pane; a narrow page scrolls as a whole) --

let shownConversation = null;
let shownContext = null;

function revealSelection() {
  const pane = byId("reading-pane");
  const conversation = byId("conversation");
  const context = byId("context");
  if (!pane || window.getComputedStyle(pane).overflowY === "visible") {
    shownConversation = conversation;
    shownContext = context;
    return;
  }
  if (context && context !== shownContext && !context.hidden) {
    pane.scrollTop = 0; // the tab just opened, or followed the selection: its summary first
  } else if (conversation && conversation !== shownConversation) {
    const entry = conversation.querySelector("article.entry.selected");
    if (entry) {
      // Below the sticky tab bar, so the entry's header is in view.
      const tabs = byId("pane-tabs")?.getBoundingClientRect().height ?? 0;
      const top = entry.getBoundingClientRect().top - pane.getBoundingClientRect().top + pane.scrollTop;
      pane.scrollTop = Math.max(0, top - tabs - 8);
    }
  }
  shownConversation = conversation;
  shownContext = context;
}

function refresh() {
  rovingTree();
  revealSelection();
}

document.addEventListener("htmx:afterSettle", refresh);
wireHandle();
refresh();
