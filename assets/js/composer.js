// Both chat tabs' message boxes while an answer streams (Chat: m3ui/ui/chat/view.py, Tools: m3ui/ui/tools/layout.py):
// - Enter queues the message visibly, and it is sent when the answer ends (the box stays open meanwhile);
// - Esc stops the answer;
// - a Regenerate or Retry is not sent: one note under the message box says to stop first.
// Each tab's Stop button is only visible while that tab shows a running answer.
(() => {
  const QUEUED = "Queued: your message is sent when this answer ends (Esc stops the answer).";
  const BUSY = "An answer is still streaming: stop it first (■ Stop or Esc), then regenerate or retry.";
  const TABS = [
    { box: "#m3-message", send: "#m3-send", stop: "#m3-stop", note: "m3-queued",
      answering: "#m3-regenerate, #m3-retry-from, #m3-chatbot button[aria-label='Retry']" },
    { box: "#m3-tools-message", send: "#m3-tools-send", stop: "#m3-tools-stop", note: "m3-tools-queued",
      answering: "#m3-tools-regenerate, #m3-tools-chatbot button[aria-label='Retry']" },
  ].map((tab) => ({ ...tab, queued: false, lastTry: 0 }));

  const $ = (selector) => document.querySelector(selector);
  const streaming = (tab) => { const stop = $(tab.stop); return !!stop && stop.offsetParent !== null; };

  function say(tab, text) { // the note under the tab's message box ("" hides it)
    const composer = $(tab.box) && $(tab.box).closest(".m3-composer");
    if (!composer) return;
    let note = document.getElementById(tab.note);
    if (!note) {
      note = document.createElement("div");
      note.id = tab.note;
      note.className = "m3-queued";
      composer.after(note);
    }
    note.textContent = text;
    note.hidden = !text;
  }

  function queue(tab, on) {
    tab.queued = on;
    say(tab, on ? QUEUED : "");
  }

  document.addEventListener("keydown", (event) => {
    for (const tab of TABS) {
      if (event.key === "Escape" && streaming(tab)) {
        event.preventDefault();
        $(tab.stop).click();
        return;
      }
      const box = event.target.closest && event.target.closest(tab.box);
      if (event.key !== "Enter" || event.shiftKey || event.isComposing || !box || !streaming(tab)) continue;
      event.preventDefault(); // capture phase: Gradio's own Enter handler never sees it
      event.stopImmediatePropagation();
      if (event.target.value.trim()) queue(tab, true);
      return;
    }
  }, true);

  document.addEventListener("click", (event) => {
    const tab = TABS.find((t) => event.target.closest && event.target.closest(t.answering) && streaming(t));
    if (!tab) return;
    event.preventDefault();
    event.stopImmediatePropagation();
    say(tab, BUSY);
  }, true);

  setInterval(() => {
    for (const tab of TABS) {
      const box = $(tab.box + " textarea");
      if (tab.queued && (!box || !box.value.trim())) queue(tab, false); // sent (the box empties) or cleared
      if (streaming(tab)) continue;
      if (!tab.queued && document.getElementById(tab.note)) say(tab, ""); // the answer ended: old news
      // Gradio ignores a Send while the last answer's event is still closing: try again until it is taken.
      if (tab.queued && Date.now() - tab.lastTry > 1000) {
        tab.lastTry = Date.now();
        $(tab.send).click();
      }
    }
  }, 300);
})();
