// Gradio's login page, made m3ui's (it is Gradio's own page: this script only changes how it reads): the app's
// name and the light/dark toggle on top (assets/head/theme.js handles the toggle), "Wrong user name or password."
// for Gradio's "Incorrect Credentials", and the user name kept after a failed try (Gradio empties the form).
(() => {
  const NAME_KEY = "m3ui-login-name";
  const TOGGLE = '<button type="button" class="m3-theme-toggle" title="Light or dark pages (remembered in this '
    + 'browser)"><span class="m3-when-light">☾ Dark</span><span class="m3-when-dark">☀ Light</span></button>';

  // Gradio does not give its login page the app's styles: these travel with the script.
  const STYLE = ".m3-login-head { display: flex; align-items: center; gap: 0.75rem; margin-bottom: 0.5rem; }"
    + " .m3-login-name { font-weight: 700; font-size: 1.3rem; margin-right: auto; }"
    + " .m3-login-failed { color: #b91c1c; font-weight: 700; margin: 0.5rem 0; }"
    + " .dark .m3-login-failed { color: #f87171; } .m3-login-hidden { display: none !important; }"
    + " .m3-login-head .m3-theme-toggle { display: inline-flex; gap: 0.3rem; cursor: pointer; padding: 0.2rem 0.7rem;"
    + " border-radius: 999px; font-size: 0.85rem; border: 1px solid #9ca3af; background: transparent; color: inherit; }"
    + " .dark .m3-login-head .m3-when-light, :root:not(.dark) .m3-login-head .m3-when-dark { display: none; }";

  function loginPanel() {
    const password = document.querySelector(".wrap.min-h-screen .panel input[type=password]");
    return password ? password.closest(".panel") : null;
  }

  function remember(panel) {
    const name = panel.querySelector("input[type=text]");
    if (name && name.value) {
      try { sessionStorage.setItem(NAME_KEY, name.value); } catch (e) { /* private mode: not kept */ }
    }
    // a second failed try empties the form again, with the message already shown
    for (const wait of [300, 800, 1500]) {
      setTimeout(() => { if (panel.querySelector(".m3-login-failed")) refill(panel); }, wait);
    }
  }

  function dress(panel) {
    const title = panel.querySelector(":scope > h2");
    if (title && !panel.querySelector(".m3-login-head")) {
      const style = document.createElement("style");
      style.textContent = STYLE;
      document.head.appendChild(style);
      const head = document.createElement("div");
      head.className = "m3-login-head";
      head.innerHTML = '<span class="m3-login-name">m3ui · MiniMax-M3</span>' + TOGGLE;
      title.before(head);
      title.textContent = "Sign in";
      document.title = "Sign in — m3ui";
      const name = panel.querySelector("input[type=text]");
      if (name) name.setAttribute("autocomplete", "username");
      const password = panel.querySelector("input[type=password]");
      if (password) password.setAttribute("autocomplete", "current-password");
    }
    // Gradio writes its message through its translations (it would overwrite ours): hidden, ours beside it
    for (const heading of panel.querySelectorAll(":scope > :not(.m3-login-hidden):not(.m3-login-failed)")) {
      if (heading.textContent.trim() !== "Incorrect Credentials") continue;
      heading.classList.add("m3-login-hidden");
      const failed = document.createElement("p");
      failed.className = "m3-login-failed";
      failed.setAttribute("role", "alert");
      failed.textContent = "Wrong user name or password.";
      heading.after(failed);
      for (const wait of [0, 100, 400]) setTimeout(() => refill(panel), wait);  // after Gradio empties the form
    }
  }

  function refill(panel) {
    let kept = null;
    try { kept = sessionStorage.getItem(NAME_KEY); } catch (e) { /* none */ }
    const name = panel.querySelector("input[type=text]");
    if (!name || !kept || name.value) return;
    name.value = kept;
    name.dispatchEvent(new Event("input", { bubbles: true }));  // Gradio's form reads what it holds
    const password = panel.querySelector("input[type=password]");
    if (password) password.focus();
  }

  document.addEventListener("keydown", (event) => {
    const panel = loginPanel();
    if (panel && event.key === "Enter" && panel.contains(event.target)) remember(panel);
  }, true);
  document.addEventListener("click", (event) => {
    const panel = loginPanel();
    if (panel && event.target.closest && event.target.closest("button") && panel.contains(event.target)) {
      remember(panel);
    }
  }, true);
  new MutationObserver(() => {
    const panel = loginPanel();
    if (panel) dress(panel);
  }).observe(document.documentElement, { childList: true, subtree: true });
})();
