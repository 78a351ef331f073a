// The /branch picker (spec §14): a dialog listing the session's user messages, the last one selected.
// It opens from its "Branch…" button or an `arbor:branch-picker` event on document (double Escape, the
// command box), and htmx loads the list into it each time (hx-trigger="arbor:open"). Arrow keys, Home and End
// move between the messages, Enter branches at the focused one (a plain form submit), Escape closes.

const picker = () => document.getElementById("branch-picker");
const choices = (root) => Array.from(root.querySelectorAll(".branch-list .branch-here"));

function focusSelected(root) {
  const list = choices(root);
  const chosen = list.find((button) => button.hasAttribute("data-selected")) ?? list.at(-1);
  if (chosen) {
    chosen.focus();
    chosen.scrollIntoView({ block: "nearest" });
  }
}

export function openPicker() {
  const dialog = picker();
  if (!dialog) {
    return false;
  }
  if (dialog.open && !dialog.matches(":modal")) {
    // The page without JavaScript shows it in place; with JavaScript it becomes a modal dialog.
    dialog.close();
  }
  if (!dialog.open) {
    dialog.showModal();
  }
  // A fresh list each time: the session may have grown since the last time.
  document.getElementById("branch-picker-body")?.dispatchEvent(new CustomEvent("arbor:open"));
  return true;
}

function onKeyDown(event) {
  const dialog = picker();
  const target = event.target;
  if (!dialog?.open || event.defaultPrevented || !(target instanceof Node) || !dialog.contains(target)) {
    return;
  }
  if (event.key === "Escape") {
    // Before the tree's own Escape handler (it clears the search): this Escape is the dialog's.
    dialog.close();
    event.preventDefault();
    event.stopPropagation();
    return;
  }
  if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) {
    return;
  }
  const list = choices(dialog);
  if (list.length === 0) {
    return;
  }
  const index = list.indexOf(document.activeElement);
  let next = null;
  if (event.key === "ArrowDown") {
    next = list[index < 0 ? 0 : Math.min(index + 1, list.length - 1)];
  } else if (event.key === "ArrowUp") {
    next = index < 0 ? list.at(-1) : list[Math.max(index - 1, 0)];
  } else if (event.key === "Home") {
    next = list[0];
  } else if (event.key === "End") {
    next = list.at(-1);
  }
  if (next) {
    event.preventDefault();
    next.focus();
    next.scrollIntoView({ block: "nearest" });
  }
}

// Capture phase: the dialog's keys are handled before the page's document-level shortcuts see them.
document.addEventListener("keydown", onKeyDown, true);

document.addEventListener("arbor:branch-picker", () => openPicker());

document.addEventListener("click", (event) => {
  const opener = event.target instanceof Element ? event.target.closest("[data-branch-picker-open]") : null;
  if (opener && !event.ctrlKey && !event.metaKey && !event.shiftKey && event.button === 0) {
    // A modified click still opens the picker's page (a new tab) as a plain link.
    event.preventDefault();
    openPicker();
  }
});

// The list arrived (or changed page, or came back with a notice): focus the selected message.
document.addEventListener("htmx:afterSettle", (event) => {
  const dialog = picker();
  if (dialog?.open && event.target instanceof Node && dialog.contains(event.target)) {
    focusSelected(dialog);
  }
});

// The page without JavaScript's dialog, shown in place: its list is already there.
const initial = picker();
if (initial?.open) {
  focusSelected(initial);
}
