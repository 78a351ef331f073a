// The colour theme (system, light or dark) and the tree pane's width, applied before the first paint: a
// classic script in <head>, so nothing flashes. "system" leaves data-theme off: prefers-color-scheme decides.
(() => {
  const THEME_KEY = "arbor-theme";
  const WIDTH_KEY = "arbor-tree-width"; // written by panes.js
  const THEMES = ["system", "light", "dark"];
  const root = document.documentElement;

  // localStorage throws when storage is disabled: then the choice lasts as long as the page.
  const read = (key) => {
    try {
      return window.localStorage.getItem(key);
    } catch {
      return null;
    }
  };
  const write = (key, value) => {
    try {
      if (value === null) {
        window.localStorage.removeItem(key);
      } else {
        window.localStorage.setItem(key, value);
      }
    } catch {
      // not persisted
    }
  };

  const saved = read(THEME_KEY);
  let theme = THEMES.includes(saved) ? saved : "system";

  const apply = () => {
    if (theme === "system") {
      delete root.dataset.theme;
    } else {
      root.dataset.theme = theme;
    }
  };
  apply();

  const width = Number.parseFloat(read(WIDTH_KEY) ?? "");
  if (width >= 15 && width <= 75) {
    root.style.setProperty("--tree-width", `${width}%`);
  }

  const next = (name) => THEMES[(THEMES.indexOf(name) + 1) % THEMES.length];

  function wireToggle() {
    const button = document.getElementById("theme-toggle");
    if (!button) {
      return;
    }
    const show = () => {
      button.dataset.theme = theme;
      button.querySelector(".theme-name").textContent = theme;
      button.title = `Colour theme: ${theme} (click for ${next(theme)})`;
    };
    button.addEventListener("click", () => {
      theme = next(theme);
      write(THEME_KEY, theme === "system" ? null : theme);
      apply();
      show();
    });
    // Another tab changed it.
    window.addEventListener("storage", (event) => {
      if (event.key === THEME_KEY) {
        theme = THEMES.includes(event.newValue) ? event.newValue : "system";
        apply();
        show();
      }
    });
    show();
    button.hidden = false;
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", wireToggle);
  } else {
    wireToggle();
  }
})();
