// "Copy link" on every entry of the conversation: copies the entry's absolute permalink (?targetId=...). The
// listener sits on the document because htmx replaces the conversation; without JavaScript the buttons stay
// hidden and the "permalink" link next to them does the job.

const RESET_MS = 1500;
const labels = new WeakMap(); // button → its own text, while it says "Copied"
const timers = new WeakMap();

document.documentElement.classList.add("can-copy");

// One polite live region for screen readers (the button's new text alone is not always announced).
function announce(text) {
  let region = document.getElementById("copy-status");
  if (!region) {
    region = document.createElement("p");
    region.id = "copy-status";
    region.className = "visually-hidden";
    region.setAttribute("role", "status");
    document.body.append(region);
  }
  region.textContent = "";
  // A new text node on the next frame, so that the same message twice is announced twice.
  window.requestAnimationFrame(() => {
    region.textContent = text;
  });
}

// The clipboard API needs a secure context (https or localhost); elsewhere the old execCommand still works.
function copyWithSelection(text) {
  const active = document.activeElement;
  const area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.className = "visually-hidden";
  document.body.append(area);
  area.select();
  let copied = false;
  try {
    copied = document.execCommand("copy");
  } catch {
    copied = false;
  }
  area.remove();
  if (active instanceof HTMLElement) {
    active.focus();
  }
  return copied;
}

async function copyText(text) {
  if (navigator.clipboard?.writeText) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch {
      // refused (no permission, document not focused): try the other way
    }
  }
  return copyWithSelection(text);
}

function flash(button, text) {
  if (!labels.has(button)) {
    labels.set(button, button.textContent);
  }
  button.textContent = text;
  button.classList.add("copied");
  window.clearTimeout(timers.get(button));
  timers.set(
    button,
    window.setTimeout(() => {
      button.textContent = labels.get(button);
      button.classList.remove("copied");
      labels.delete(button);
    }, RESET_MS),
  );
}

document.addEventListener("click", async (event) => {
  const button =
    event.target instanceof Element ? event.target.closest("button[data-copy-link], button[data-copy-text]") : null;
  if (!button) {
    return;
  }
  event.preventDefault();
  // data-copy-text: a text as it is (a command line); data-copy-link: an address made absolute.
  const isText = button.dataset.copyText !== undefined;
  const text = isText ? button.dataset.copyText : new URL(button.dataset.copyLink, window.location.href).href;
  const copied = await copyText(text);
  flash(button, copied ? "Copied" : "Copy failed");
  const what = isText ? "Text" : "Link";
  announce(copied ? `${what} copied` : `The ${what.toLowerCase()} could not be copied`);
});
