// The conversation pane's display: global toggles for thinking blocks and tool output (buttons, and T and O
// as in pi's HTML export; the tree's filters are on Alt+letters, so nothing clashes), and images opened large
// in a modal (Escape or a click closes it). htmx replaces the conversation on every selection: the toggles'
// state lives on <html> and in localStorage and is applied again after each swap.

const STORE = "arbor.conversation";
const root = document.documentElement;
const state = { thinking: false, tools: true };

try {
  Object.assign(state, JSON.parse(window.localStorage.getItem(STORE) || "{}"));
} catch {
  // no storage (private mode) or a bad value: the defaults
}

const isEditable = (element) =>
  element instanceof HTMLElement &&
  (element.isContentEditable || ["INPUT", "TEXTAREA", "SELECT", "BUTTON"].includes(element.tagName));

function apply() {
  root.classList.toggle("hide-tool-output", !state.tools);
  const conversation = document.getElementById("conversation");
  if (!conversation) {
    return;
  }
  for (const details of conversation.querySelectorAll("details.block-thinking")) {
    details.open = state.thinking;
  }
  const toolbar = conversation.querySelector(".conversation-toolbar");
  if (toolbar) {
    toolbar.hidden = false;
    for (const button of toolbar.querySelectorAll("[data-toggle]")) {
      button.setAttribute("aria-pressed", String(Boolean(state[button.dataset.toggle])));
    }
  }
  for (const image of conversation.querySelectorAll("img.block-image")) {
    if (!image.hasAttribute("tabindex")) {
      image.tabIndex = 0;
      image.setAttribute("role", "button");
      image.setAttribute("aria-label", `${image.alt || "image"}: open large`);
    }
  }
}

function toggle(name) {
  state[name] = !state[name];
  try {
    window.localStorage.setItem(STORE, JSON.stringify(state));
  } catch {
    // kept for this page only
  }
  apply();
  const status = document.getElementById("live-status");
  if (status) {
    const what = name === "thinking" ? "Thinking" : "Tool output";
    const how = name === "thinking" ? (state.thinking ? "expanded" : "collapsed") : state.tools ? "shown" : "hidden";
    status.textContent = `${what} ${how}`;
  }
}

// -- the image modal ---------------------------------------------------------------------------------------

function imageDialog() {
  let dialog = document.getElementById("image-modal");
  if (!dialog) {
    dialog = document.createElement("dialog");
    dialog.id = "image-modal";
    dialog.className = "image-modal";
    dialog.setAttribute("aria-label", "Image");
    const image = document.createElement("img");
    image.className = "image-modal-image";
    const close = document.createElement("button");
    close.type = "button";
    close.className = "image-modal-close";
    close.textContent = "Close (Esc)";
    dialog.append(close, image);
    // A click anywhere (the image, the backdrop, the button) closes it.
    dialog.addEventListener("click", () => dialog.close());
    document.body.append(dialog);
  }
  return dialog;
}

let opener = null;

function openImage(image) {
  const dialog = imageDialog();
  const large = dialog.querySelector("img");
  large.src = image.src;
  large.alt = image.alt;
  opener = image;
  dialog.showModal();
  dialog.querySelector("button").focus();
  dialog.addEventListener("close", () => opener?.focus(), { once: true });
}

document.addEventListener("click", (event) => {
  const target = event.target instanceof Element ? event.target : null;
  const button = target?.closest(".conversation-toolbar [data-toggle]");
  if (button) {
    toggle(button.dataset.toggle);
    return;
  }
  const image = target?.closest("#conversation img.block-image");
  if (image) {
    openImage(image);
  }
});

document.addEventListener("keydown", (event) => {
  if (event.defaultPrevented || event.isComposing || event.altKey || event.ctrlKey || event.metaKey) {
    return;
  }
  const target = event.target;
  if ((event.key === "Enter" || event.key === " ") && target instanceof Element && target.matches("#conversation img.block-image")) {
    event.preventDefault();
    openImage(target);
    return;
  }
  if (document.querySelector("dialog[open]") || isEditable(target) || event.shiftKey) {
    return;
  }
  const key = event.key.toLowerCase();
  if (key === "t" || key === "o") {
    event.preventDefault();
    toggle(key === "t" ? "thinking" : "tools");
  }
});

document.addEventListener("htmx:afterSettle", apply);
apply();
