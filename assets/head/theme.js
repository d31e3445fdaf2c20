// Dark mode, remembered per browser (localStorage) on every page, the admin's too (m3ui/ui/header_view.py draws
// the toggle). This script is put at the top of the HTML's <head> (m3ui/web/early_head.py): it runs before the
// first paint and before Gradio mounts. Gradio styles `:root.dark` and `.dark`, and takes the page's theme from
// ?__theme= when it mounts: the class goes on <html> at once and the URL says the same, so Gradio agrees.
(() => {
  const KEY = "m3ui-theme";
  const MODES = ["light", "dark"];

  function remembered() {
    try { return localStorage.getItem(KEY); } catch (e) { return null; }
  }

  function apply(mode) {
    for (const element of [document.documentElement, document.body]) {
      if (element) element.classList.toggle("dark", mode === "dark");
    }
    document.documentElement.style.colorScheme = mode;
    const url = new URL(window.location.href);
    if (url.searchParams.get("__theme") !== mode) {
      url.searchParams.set("__theme", mode);
      history.replaceState(history.state, "", url);
    }
  }

  // Until Gradio mounts, the page is its bare <body>, coloured by the system's scheme: follow ours instead.
  const early = document.createElement("style");
  early.textContent = ":root.dark body { background: var(--bg-dark); color: var(--col-dark); }"
    + " :root:not(.dark) body { background: var(--bg); color: var(--col); }";
  document.head.appendChild(early);

  // A theme asked for in the URL (Gradio's own setting) is remembered like a click on the toggle.
  const asked = new URL(window.location.href).searchParams.get("__theme");
  const mode = MODES.includes(asked) ? asked : remembered();
  if (MODES.includes(mode)) {
    try { localStorage.setItem(KEY, mode); } catch (e) { /* private mode: this page still follows it */ }
    apply(mode);
  }

  document.addEventListener("click", (event) => {
    if (!event.target.closest || !event.target.closest(".m3-theme-toggle")) return;
    const next = document.body.classList.contains("dark") ? "light" : "dark";
    try { localStorage.setItem(KEY, next); } catch (e) { /* private mode: not remembered */ }
    apply(next);
  });
})();
