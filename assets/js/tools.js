// The Tools tab's page script: Esc stops a running answer, as in the chat (assets/js/chat.js). The Stop button is
// only visible while this tab shows a running answer, so Esc anywhere else does nothing here.
(() => {
  document.addEventListener("keydown", (event) => {
    const stop = document.querySelector("#m3-tools-stop");
    if (event.key !== "Escape" || !stop || stop.offsetParent === null) return;
    event.preventDefault();
    stop.click();
  });
})();
