// The session list: a click anywhere on a row opens its session (the title is the link, for keyboards and
// for pages without JavaScript); ArrowUp/ArrowDown move between the rows' title links, Enter opens.

const INTERACTIVE = "a, button, input, select, textarea, summary, details, label, form";

function rowLinks() {
  return [...document.querySelectorAll("#session-list tr.session-row a.title")];
}

document.addEventListener("click", (event) => {
  const row = event.target.closest?.("tr.session-row[data-href]");
  if (!row || event.button !== 0 || event.target.closest(INTERACTIVE)) {
    return;
  }
  // Selecting text in a row is not a click on it.
  if (String(window.getSelection?.() ?? "").length > 0) {
    return;
  }
  if (event.ctrlKey || event.metaKey || event.shiftKey) {
    window.open(row.dataset.href, "_blank", "noopener");
    return;
  }
  window.location.assign(row.dataset.href);
});

document.addEventListener("keydown", (event) => {
  if (event.key !== "ArrowDown" && event.key !== "ArrowUp") {
    return;
  }
  const current = event.target.closest?.("tr.session-row a.title");
  if (!current || event.altKey || event.ctrlKey || event.metaKey) {
    return;
  }
  const links = rowLinks();
  const next = links[links.indexOf(current) + (event.key === "ArrowDown" ? 1 : -1)];
  if (next) {
    event.preventDefault();
    next.focus();
  }
});

// One row menu open at a time; a click elsewhere or Escape closes it.
document.addEventListener("click", (event) => {
  for (const menu of document.querySelectorAll("details.row-menu[open]")) {
    if (!menu.contains(event.target)) {
      menu.open = false;
    }
  }
});

document.addEventListener("keydown", (event) => {
  if (event.key !== "Escape") {
    return;
  }
  for (const menu of document.querySelectorAll("details.row-menu[open]")) {
    menu.open = false;
    menu.querySelector("summary")?.focus();
  }
});
