// The Chat tab's saved system prompts (m3ui/ui/chat/saved_prompts.py calls window.m3uiPrompts):
// - without accounts they are kept in the browser's storage, as the chats are, under one key. Each change is made
//   on what the storage holds at the click (another tab may have saved a prompt since this page loaded), and the
//   result written back. With accounts the server keeps them per person (m3ui/accounts/saved_prompts.py).
// - the picker shows which saved prompt the system prompt box holds ("None" for any other text), and
//   "Use for new chats" whether that prompt is the one New chat starts with.
(() => {
  const KEY = "m3ui-saved-prompts";
  const NONE = "None"; // m3ui/conversation/saved_prompts.py NONE_CHOICE
  const FULL = "This browser's storage is full: the saved prompts did not change. Delete old chats or prompts.";

  function read() {
    try { return JSON.parse(localStorage.getItem(KEY)); } catch (e) { return null; }
  }

  function write(book) {
    if (!book || typeof book !== "object") return;
    let problem = "";
    try { localStorage.setItem(KEY, JSON.stringify(book)); } catch (e) { problem = FULL; }
    let note = document.querySelector("#m3-prompt-warning");
    const anchor = document.querySelector("#m3-prompt-default");
    if (!note && problem && anchor) {
      note = document.createElement("div");
      note.id = "m3-prompt-warning";
      note.className = "m3-note m3-note-error";
      anchor.after(note);
    }
    if (note) { note.textContent = problem; note.hidden = !problem; }
  }

  function match(text, book) {
    const wanted = (text || "").trim();
    const found = wanted && ((book && book.prompts) || []).find((prompt) => prompt.text === wanted);
    return found ? found.name : NONE;
  }

  function defaultBox(name, book) {
    const some = !!name && name !== NONE;
    return { __type__: "update", value: some && !!book && book.default === name, interactive: some };
  }

  window.m3uiPrompts = { read, write, match, defaultBox };
})();
