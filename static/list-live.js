// The session list: a websocket tells it that some session changed (an import, a sync, a label, a move). The
// list is not replaced under the reader (it may hold upload results or a notice): a line offers the refresh.

const notice = document.getElementById("list-changed");
const RETRY_MAX_MS = 15_000;
const CLOSE_FORBIDDEN = 4403;
let retryMs = 1000;

function connect() {
  const scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
  const socket = new WebSocket(`${scheme}${window.location.host}/ws/sessions/`);
  socket.addEventListener("open", () => {
    retryMs = 1000;
    document.body.dataset.listLive = "true";
  });
  socket.addEventListener("message", (event) => {
    let message;
    try {
      message = JSON.parse(event.data);
    } catch {
      return;
    }
    if (message.type === "changed" && notice) {
      notice.hidden = false;
    }
  });
  socket.addEventListener("close", (event) => {
    document.body.dataset.listLive = "false";
    if (event.code !== CLOSE_FORBIDDEN) {
      window.setTimeout(connect, retryMs);
      retryMs = Math.min(retryMs * 2, RETRY_MAX_MS);
    }
  });
}

// A refresh of the list (this notice's link, "Refresh", an upload, paging) makes the notice current again.
document.addEventListener("htmx:afterSettle", (event) => {
  if (notice && event.detail?.target?.id === "session-list") {
    notice.hidden = true;
  }
});

if (notice) {
  connect();
}
