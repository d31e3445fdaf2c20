// The page's live channel (m3ui/live): while an answer streams, its frames come here instead of through
// Gradio's queue, and are shown by the Chatbot itself: each frame clicks a hidden button whose browser-only
// event (m3ui/ui/chat/live_view.py) hands the Chatbot its value with the live messages put in. The page draws
// its ticket once and sends it with every answer it asks for; it opens the channel when it asks (ui/chat/view.py's
// ASK_JS / BUSY_JS) and the server ends it with the answer, so no connection is held between answers.
// Without an open channel the server sends the answer's frames through Gradio as before.
(() => {
  const PATH = "m3ui-live/"; // relative: under whatever prefix the app is served
  let ticket = null;
  let source = null;
  let start = 0; // where the live messages begin in the chat shown
  let live = []; // the live messages, as the server last described them
  let pending = false; // a frame not yet handed to the Chatbot
  let clickedAt = 0; // when the hidden button was clicked for a frame it has not shown yet (0: none)
  let frames = 0; // frames taken since the page loaded (for tests and curious people)

  function pageTicket() {
    if (!ticket) {
      const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
      ticket = Array.from(crypto.getRandomValues(new Uint8Array(24)), (b) => letters[b & 63]).join("");
    }
    return ticket;
  }

  function close() {
    if (source) source.close();
    source = null;
  }

  function open() {
    close();
    start = 0;
    live = [];
    pending = false;
    source = new EventSource(PATH + pageTicket());
    source.onmessage = (event) => take(JSON.parse(event.data));
    source.addEventListener("end", close);
    source.onerror = () => { if (source && source.readyState === EventSource.CLOSED) source = null; };
  }

  // Tells the server, at the click, what the page is about to ask (m3ui/live/early_ask.py): the engine gets the
  // request before Gradio delivers the click. The answer itself still comes through Gradio; the reply is ignored.
  function ask(text, names, values) {
    const form = { text };
    names.forEach((name, i) => { form[name] = values[i]; });
    fetch(PATH + pageTicket() + "/ask", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(form),
    }).catch(() => {});
  }

  function take(frame) {
    if (frame.start !== start) live = [];
    start = frame.start;
    for (const op of frame.ops) {
      if ("set" in op) {
        live[op.i] = op.set;
      } else { // text appended to the message's only part: a new object, so the Chatbot sees the change
        const message = live[op.i];
        const part = message.content[0];
        live[op.i] = { ...message, content: [{ ...part, text: part.text + op.append }] };
      }
    }
    live.length = frame.length;
    pending = true;
    frames += 1;
    show();
  }

  function show() {
    const button = document.querySelector("#m3-chat-live");
    if (!button || Date.now() - clickedAt < 1000) return; // one click at a time (a lost one is retried)
    clickedAt = Date.now();
    button.click();
  }

  // The hidden button's event: the Chatbot's value with the live messages in place.
  function apply(value) {
    clickedAt = 0;
    const shown = Array.isArray(value) ? value : [];
    if (!pending) return [shown];
    if (shown.length < start) { // the answer's first Gradio frame (its question) has not arrived yet: look
      setTimeout(show, 16); // again a display frame later (the first token may be waiting on it)
      return [shown];
    }
    pending = false;
    return [shown.slice(0, start).concat(live)];
  }

  window.m3uiLive = { ticket: pageTicket, open, ask, apply, frames: () => frames };
})();
