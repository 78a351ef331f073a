// The session page's websocket: one per page, reconnecting. Other scripts talk to it through DOM events, so
// none of them imports another: `arbor:send` (detail: a message) goes out, `arbor:socket` (detail: a message)
// comes in. A "changed" message (a label, a move, a summary or a sync, from this page or another) refreshes
// the rows of the tree in view (explorer.js asks the rows endpoint for them), and the conversation when it
// shows the branch that grew, unless the reader is typing in the tree or a navigation runs (then later), or
// the page is in a background tab (then when it is shown again).

const root = document.getElementById("navigator-root");
const RETRY_MAX_MS = 15_000;
const REFRESH_DELAY_MS = 250;
const CLOSE_NOT_FOUND = 4404;

let socket = null;
let retryMs = 1000;
let refreshTimer = null;
let refreshWanted = false;
let conversationStale = false; // a change extended the branch the conversation shows

function status(text) {
  const line = document.getElementById("live-status");
  if (line) {
    line.textContent = text;
  }
}

function emit(message) {
  document.dispatchEvent(new CustomEvent("arbor:socket", { detail: message }));
}

function busy() {
  // Typing a label or a search, or a navigation dialog open: refresh later. A page in a background tab waits
  // until it is shown again: a change to a session many people keep open costs only the pages being looked at.
  const active = document.activeElement;
  const typing = active instanceof HTMLElement && active.closest("#tree") && active.matches("input, textarea");
  return Boolean(
    document.hidden ||
      typing ||
      document.querySelector("dialog[open]") ||
      document.querySelector("#tree .label-editor"),
  );
}

function refresh() {
  refreshTimer = null;
  if (!window.htmx || !document.getElementById("tree")) {
    return;
  }
  if (busy()) {
    refreshWanted = true;
    return;
  }
  refreshWanted = false;
  // The tree pane (explorer.js) fetches only the rows in view (and the reading pane when the branch on
  // screen grew); without it, the tree is loaded again.
  const event = new CustomEvent("arbor:tree-changed", {
    cancelable: true,
    detail: { conversation: conversationStale },
  });
  conversationStale = false;
  if (document.dispatchEvent(event)) {
    window.htmx.ajax("GET", window.location.href, { target: "#tree", swap: "outerHTML" });
  }
}

function scheduleRefresh() {
  if (refreshTimer === null) {
    refreshTimer = window.setTimeout(refresh, REFRESH_DELAY_MS);
  }
}

function connect() {
  if (!root?.dataset.wsPath) {
    return;
  }
  const scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
  socket = new WebSocket(scheme + window.location.host + root.dataset.wsPath);
  socket.addEventListener("open", () => {
    retryMs = 1000;
    root.dataset.live = "true";
    status("");
    emit({ type: "connected" });
  });
  socket.addEventListener("message", (event) => {
    let message;
    try {
      message = JSON.parse(event.data);
    } catch {
      return;
    }
    if (message.type === "changed") {
      // The conversation shows the branch to the stored leaf: what was added below it belongs on screen too.
      const previous = root.dataset.storedLeaf;
      if (previous && document.querySelector(`#conversation article.entry[data-entry-id="${CSS.escape(previous)}"]`)) {
        conversationStale = true;
      }
      if (message.leaf !== undefined && message.leaf !== null) {
        root.dataset.storedLeaf = message.leaf;
      } else if (message.reason === "leaf") {
        root.dataset.storedLeaf = "";
      }
      scheduleRefresh();
    }
    emit(message);
  });
  socket.addEventListener("close", (event) => {
    root.dataset.live = "false";
    emit({ type: "disconnected", code: event.code });
    if (event.code === CLOSE_NOT_FOUND) {
      status("This session is no longer imported: live updates are off.");
      return;
    }
    status("Live updates paused: reconnecting…");
    window.setTimeout(connect, retryMs);
    retryMs = Math.min(retryMs * 2, RETRY_MAX_MS);
  });
}

document.addEventListener("arbor:send", (event) => {
  if (socket?.readyState === WebSocket.OPEN) {
    socket.send(JSON.stringify(event.detail));
  } else {
    emit({ type: "error", code: "offline", message: "Not connected to the server; try again in a moment." });
  }
});

// A refresh put off while the reader was busy runs when the dialog closes, the focus leaves the tree or the
// tab is shown again.
document.addEventListener("visibilitychange", () => {
  if (!document.hidden && refreshWanted) {
    scheduleRefresh();
  }
});
for (const name of ["close", "focusout"]) {
  document.addEventListener(
    name,
    () => {
      if (refreshWanted) {
        scheduleRefresh();
      }
    },
    true,
  );
}

connect();
