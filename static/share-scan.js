// The share form of a long branch: runs the redaction scan over a websocket (treeview/share_scan.py), shows
// its progress, then reloads the page, which finds the scan's result cached and shows the preview. Without
// JavaScript the "Scan in this request instead" link does the same in one (long) request.

const box = document.getElementById("share-scan");
if (box) {
  const status = document.getElementById("share-scan-status");
  const bar = document.getElementById("share-scan-progress");
  const scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
  const socket = new WebSocket(scheme + window.location.host + box.dataset.wsPath);
  let finished = false;

  socket.addEventListener("open", () => {
    socket.send(JSON.stringify({ type: "start", leafId: box.dataset.leafId }));
  });
  socket.addEventListener("message", (event) => {
    const message = JSON.parse(event.data);
    if (message.type === "progress") {
      bar.max = Math.max(1, message.total);
      bar.value = message.done;
      bar.textContent = `${message.done} of ${message.total}`;
      status.textContent = `Scanning for secrets: ${message.done} of ${message.total} entries.`;
    } else if (message.type === "done") {
      finished = true;
      status.textContent = "Scan finished: loading the preview.";
      window.location.reload();
    } else if (message.type === "error") {
      finished = true;
      status.textContent = `The scan failed: ${message.message}`;
      box.classList.add("share-scan-failed");
    }
  });
  socket.addEventListener("close", () => {
    if (!finished) {
      status.textContent = "The connection closed before the scan ended; use the link below.";
      box.classList.add("share-scan-failed");
    }
  });
}
