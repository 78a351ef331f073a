// The navigator: move the session's leaf like the agent's /tree, with an optional summary of the abandoned
// branch streamed over the websocket (live.js owns the socket). Escape while the summary streams cancels it and
// leaves the leaf where it was; Escape in the custom-instructions box goes back to the choice. Also the command
// box (/tree, /branch), double Escape and the "continue from here" box.

const root = document.getElementById("navigator-root");
const dialog = document.getElementById("navigator");
const byId = (id) => document.getElementById(id);

// The navigation this page started: { target } while it runs, else null.
let running = null;

const send = (message) => document.dispatchEvent(new CustomEvent("arbor:send", { detail: message }));

function show(part) {
  for (const id of ["navigator-choice", "navigator-custom", "navigator-progress"]) {
    byId(id).hidden = id !== part;
  }
}

function setError(text) {
  const line = byId("navigator-error");
  line.textContent = text || "";
  line.hidden = !text;
}

function selectedRow() {
  return document.querySelector('#tree .tree-rows > [role="treeitem"][aria-selected="true"]');
}

function rowText(entryId) {
  const row = Array.from(document.querySelectorAll('#tree [role="treeitem"]')).find(
    (candidate) => candidate.dataset.entryId === entryId,
  );
  return row?.querySelector(".tree-text")?.textContent?.trim() || entryId;
}

// Open the choice of §17.8 for an entry (default: the selected tree row). `summarize` (Shift+Enter in the
// tree, as oh-my-pi does): choose "Summarize" at once when it is available; else the choice stays, saying why.
function openNavigator(entryId, summarize = false) {
  const target = entryId || selectedRow()?.dataset.entryId;
  if (root.dataset.refused) {
    // The user sees the session but may not move its leaf (the server refuses it too): say why.
    byId("command-message").textContent = root.dataset.refused;
    return false;
  }
  if (!target || !dialog || running) {
    return false;
  }
  dialog.dataset.target = target;
  byId("navigator-target-text").textContent = rowText(target);
  const already = target === root.dataset.storedLeaf;
  byId("navigator-already").hidden = !already;
  byId("navigator-nothing").hidden = true;
  setError("");
  show(already ? null : "navigator-choice");
  byId("navigator-stream").textContent = "";
  if (!dialog.open) {
    dialog.showModal();
  }
  const first = dialog.querySelector("#navigator-choice button:not([disabled])");
  (already ? dialog.querySelector('[data-action="close"]') : first)?.focus();
  if (summarize && !already && !dialog.querySelector('#navigator-choice [data-choice="summarize"]').disabled) {
    start(true);
  }
  return true;
}

function start(summarize, instructions) {
  const target = dialog.dataset.target;
  if (!target || running) {
    return;
  }
  running = { target };
  setError("");
  show("navigator-progress");
  byId("navigator-phase").textContent = summarize ? "Collecting the abandoned branch…" : "Moving the leaf…";
  byId("navigator-stream").textContent = "";
  dialog.querySelector('[data-action="cancel"]').focus();
  send({ type: "start", target, summarize, instructions: instructions || null });
}

function cancel() {
  if (running) {
    byId("navigator-phase").textContent = "Cancelling…";
    send({ type: "cancel" });
  }
}

function showContinue(text) {
  const box = byId("continue-box");
  if (!box) {
    return;
  }
  byId("continue-text").value = text;
  byId("continue-copied").textContent = "";
  box.hidden = false;
}

function goTo(url) {
  // The new active path, in place: the tree answer carries the conversation out of band.
  if (url) {
    window.history.pushState({}, "", url);
  }
  if (window.htmx && document.getElementById("tree")) {
    window.htmx.ajax("GET", url || window.location.href, { target: "#tree", swap: "outerHTML" });
  } else if (url) {
    window.location.assign(url);
  }
}

function onMessage(message) {
  if (message.type === "progress") {
    if (!running) {
      return;
    }
    if (typeof message.delta === "string") {
      byId("navigator-stream").textContent += message.delta;
    } else if (message.phase === "collecting") {
      const count = message.entries;
      byId("navigator-phase").textContent = `Collecting ${count} entr${count === 1 ? "y" : "ies"} of the abandoned branch…`;
    } else if (message.phase === "summarizing") {
      const by = message.model ? ` with ${message.model}` : "";
      byId("navigator-phase").textContent = `Summarizing ${message.entries} entries${by}… (Esc cancels)`;
    }
  } else if (message.type === "done") {
    if (!running) {
      return;
    }
    running = null;
    if (message.noop) {
      byId("navigator-already").hidden = false;
      show(null);
      return;
    }
    root.dataset.storedLeaf = message.leafId ?? "";
    if (message.nothingToSummarize) {
      // Asked for a summary, none written: the dialog says why and stays until the reader closes it.
      show(null);
      const note = byId("navigator-nothing");
      note.textContent = message.message || "Nothing to summarize; the leaf moved without a summary.";
      note.hidden = false;
      dialog.querySelector('[data-action="close"]')?.focus();
      byId("live-status").textContent = "Leaf moved; nothing to summarize.";
      goTo(message.url);
      return;
    }
    dialog.close();
    byId("live-status").textContent = message.summaryId
      ? "Leaf moved; the summary of the abandoned branch was added."
      : "Leaf moved.";
    if (typeof message.editorText === "string" && message.editorText !== "") {
      showContinue(message.editorText);
    }
    goTo(message.url);
  } else if (message.type === "cancelled") {
    if (!running) {
      return;
    }
    running = null;
    dialog.close();
    byId("live-status").textContent = message.message || "Cancelled";
  } else if (message.type === "error") {
    if (!running && message.code !== "offline") {
      return;
    }
    running = null;
    show("navigator-choice");
    setError(message.message || "The navigation failed");
  } else if (message.type === "disconnected" && running) {
    // The server cancels a job whose socket closed: nothing was written.
    running = null;
    show("navigator-choice");
    setError("The connection was lost; the leaf was not moved.");
  }
}

function runCommand(text) {
  const message = byId("command-message");
  const command = text.trim().split(/\s+/)[0];
  message.textContent = "";
  if (command === "/tree") {
    treeSelector();
  } else if (command === "/branch" && !document.getElementById("branch-picker")) {
    message.textContent = "Only the session's owner and the people they let write may branch it.";
  } else if (command === "/branch") {
    document.dispatchEvent(new CustomEvent("arbor:branch-picker"));
  } else if (command) {
    message.textContent = `Unknown command ${command}: try /tree or /branch`;
    return false;
  }
  return true;
}

// "/tree": the tree pane is the selector; it takes the keyboard, and Enter on an open entry moves the leaf.
function treeSelector() {
  const row = selectedRow();
  const anchor = row?.querySelector("a[href]");
  if (anchor) {
    anchor.focus();
    anchor.scrollIntoView({ block: "nearest" });
  }
  byId("command-message").textContent = "Tree: arrows select, Enter opens an entry, Enter again moves the leaf.";
}

if (root && dialog) {
  document.addEventListener("arbor:socket", (event) => onMessage(event.detail));
  document.addEventListener("arbor:navigate", (event) =>
    openNavigator(event.detail?.entryId, Boolean(event.detail?.summarize)),
  );
  document.addEventListener("arbor:double-escape", () => {
    const action = root.dataset.doubleEscape;
    if (action === "tree") {
      treeSelector();
    } else if (action === "branch") {
      document.dispatchEvent(new CustomEvent("arbor:branch-picker"));
    }
  });

  byId("go-here").addEventListener("click", () => openNavigator());
  dialog.addEventListener("click", (event) => {
    const button = event.target instanceof Element ? event.target.closest("button") : null;
    if (!button) {
      return;
    }
    const choice = button.dataset.choice;
    if (choice === "none") {
      start(false);
    } else if (choice === "summarize") {
      start(true);
    } else if (choice === "custom") {
      show("navigator-custom");
      byId("navigator-instructions").focus();
    } else if (button.dataset.action === "back") {
      show("navigator-choice");
      dialog.querySelector('#navigator-choice [data-choice="custom"]').focus();
    } else if (button.dataset.action === "cancel") {
      cancel();
    }
  });
  byId("navigator-custom").addEventListener("submit", (event) => {
    event.preventDefault();
    start(true, byId("navigator-instructions").value);
  });
  // Escape: cancel a running summary (the dialog stays until the server confirms), or leave the
  // custom-instructions box for the choice, or close.
  dialog.addEventListener("cancel", (event) => {
    if (running) {
      event.preventDefault();
      cancel();
    } else if (!byId("navigator-custom").hidden) {
      event.preventDefault();
      show("navigator-choice");
      dialog.querySelector('#navigator-choice [data-choice="custom"]').focus();
    }
  });
  dialog.addEventListener("close", () => {
    if (running) {
      cancel();
    }
  });

  byId("command-box").addEventListener("submit", (event) => {
    event.preventDefault();
    const input = byId("command-input");
    if (runCommand(input.value)) {
      input.value = "";
    }
  });

  byId("continue-copy").addEventListener("click", async () => {
    const text = byId("continue-text").value;
    try {
      await navigator.clipboard.writeText(text);
      byId("continue-copied").textContent = "Copied";
    } catch {
      byId("continue-text").select();
      byId("continue-copied").textContent = "Select and copy (Ctrl+C)";
    }
  });
  byId("continue-dismiss").addEventListener("click", () => {
    byId("continue-box").hidden = true;
  });
}
