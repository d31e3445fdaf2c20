// The Tools tab's page script (m3ui/ui/tools_view.py calls window.m3uiTools):
// - the tool chat is kept in the browser's storage under one key, and read back when the page loads;
// - Esc stops a running answer, as in the chat (assets/js/chat.js). The Stop button is only visible while this tab
//   shows a running answer, so Esc anywhere else does nothing here;
// - a call waiting for approval brings its Approve/Deny bar into view (a short window could have it below the fold).
(() => {
  const KEY = "m3ui-tools-chat";
  const shown = (element) => !!element && element.offsetParent !== null;

  function read() {
    try { return JSON.parse(localStorage.getItem(KEY)); } catch (e) { return null; }
  }

  function write(saved) {
    if (!saved || typeof saved !== "object") return;
    try { localStorage.setItem(KEY, JSON.stringify(saved)); } catch (e) { /* storage full: the page still shows it */ }
  }

  document.addEventListener("keydown", (event) => {
    const stop = document.querySelector("#m3-tools-stop");
    if (event.key !== "Escape" || !shown(stop)) return;
    event.preventDefault();
    stop.click();
  });

  let asking = false;
  setInterval(() => {
    const bar = document.querySelector("#m3-approval");
    const now = shown(bar);
    if (now && !asking) bar.scrollIntoView({ block: "nearest" });
    asking = now;
  }, 250);

  window.m3uiTools = { read, write };
})();
