// The Tools tab's page script (m3ui/ui/tools/view.py calls window.m3uiTools):
// - without accounts, the tool chat is kept in the browser's storage under one key, and read back when the page
//   loads (with accounts the server keeps it: m3ui/ui/tools/keeping.py);
// - (Esc, and Enter while an answer runs, are composer.js's, as in the Chat tab);
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

  let asking = false;
  setInterval(() => {
    const bar = document.querySelector("#m3-approval");
    const now = shown(bar);
    if (now && !asking) bar.scrollIntoView({ block: "nearest" });
    asking = now;
  }, 250);

  window.m3uiTools = { read, write };
})();
