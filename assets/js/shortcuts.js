// Keyboard shortcuts of the Chat tab, as in the chat apps people know; `?` (outside a text box) lists them:
// Ctrl/⌘+Shift+O a new chat, Shift+Esc the message box, Ctrl/⌘+Shift+C copies the last answer,
// Ctrl/⌘+Shift+S shows or hides the chat list (the drawer on a phone).
(() => {
  const KEYS = [
    ["Ctrl/⌘ + Shift + O", "New chat"],
    ["Shift + Esc", "Focus the message box"],
    ["Ctrl/⌘ + Shift + C", "Copy the last answer"],
    ["Ctrl/⌘ + Shift + S", "Show or hide the chat list"],
    ["Esc", "Stop the answer being written"],
    ["Enter", "While an answer is written: queue your message"],
    ["?", "This list"],
  ];
  const $ = (selector) => document.querySelector(selector);
  const onChatTab = () => { const box = $("#m3-message"); return !!box && box.offsetParent !== null; };
  const typing = (target) => !!target.closest && !!target.closest("input, textarea, [contenteditable=true]");

  function sheet() {
    let dialog = $("#m3-shortcuts");
    if (!dialog) {
      dialog = document.createElement("dialog");
      dialog.id = "m3-shortcuts";
      dialog.className = "m3-shortcuts";
      const rows = KEYS.map(([keys, what]) => `<tr><td><kbd>${keys}</kbd></td><td>${what}</td></tr>`).join("");
      dialog.innerHTML = `<h3>Keyboard shortcuts</h3><table>${rows}</table>` +
        `<form method="dialog"><button id="m3-shortcuts-close">Close</button></form>`;
      dialog.addEventListener("click", (event) => { if (event.target === dialog) dialog.close(); }); // backdrop
      document.body.appendChild(dialog);
    }
    return dialog;
  }

  function say(text) { // a short note by the message box
    let note = $("#m3-shortcut-note");
    const composer = $("#m3-message") && $("#m3-message").closest(".m3-composer");
    if (!note && composer) {
      note = document.createElement("div");
      note.id = "m3-shortcut-note";
      note.className = "m3-queued";
      note.setAttribute("role", "status");
      composer.before(note);
    }
    if (!note) return;
    note.textContent = text;
    note.hidden = false;
    clearTimeout(say.timer);
    say.timer = setTimeout(() => { note.hidden = true; }, 2500);
  }

  async function copyLastAnswer() {
    const answers = document.querySelectorAll("#m3-chatbot .message-row.bot-row .message-content");
    const last = answers.length ? answers[answers.length - 1].innerText.trim() : "";
    if (!last) return say("There is no answer to copy yet.");
    try {
      await navigator.clipboard.writeText(last);
      say("Copied the last answer.");
    } catch (e) {
      say("The browser did not allow copying: use the answer's copy button.");
    }
  }

  function toggleList() {
    if (window.matchMedia("(max-width: 640px)").matches) window.m3uiChats.toggleDrawer();
    else { const list = $("#m3-sidebar"); if (list) list.classList.toggle("m3-list-hidden"); }
  }

  document.addEventListener("keydown", (event) => {
    if (!onChatTab() || event.isComposing) return;
    const mod = (event.ctrlKey || event.metaKey) && event.shiftKey && !event.altKey;
    const key = event.key.toLowerCase();
    let done = true;
    if (mod && key === "o") $("#m3-new-chat").click();
    else if (mod && key === "c") copyLastAnswer();
    else if (mod && key === "s") toggleList();
    else if (event.shiftKey && event.key === "Escape") $("#m3-message textarea").focus();
    else if (event.key === "?" && !typing(event.target) && !event.ctrlKey && !event.metaKey) sheet().showModal();
    else done = false;
    if (done) event.preventDefault();
  });
})();
