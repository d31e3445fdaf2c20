// The Chat tab's attachments (m3ui/ui/chat/attachments.py): files from the #m3-attach picker, a drop on the chat
// or a paste go to the hidden Gradio upload (#m3-attach-files), which the server reads under its own caps.
// Files the page can already tell are over the caps are not uploaded: their chips say why (the server never
// trusts these figures; it measures what it stores). Also: chip removal, the context meter's typed estimate,
// no early engine request for a question with attachments, and the prefill progress bar.
(() => {
  const MAX_BYTES = 64 * 1024 * 1024; // m3ui/documents/limits.py: Limits.max_file_bytes
  const MAX_FILES = 100; // Limits.max_files
  const CHARS_PER_TOKEN = 3.6; // m3ui/documents/token_count.py (the meter's typed part is an estimate)
  const WAITING = "Waiting for the first token"; // m3ui/ui/chat/render.py WAITING_TITLE
  const $ = (s, root = document) => root.querySelector(s);

  function human(size) {
    const units = ["B", "KB", "MB", "GB"];
    let i = 0;
    while (size >= 1024 && i < units.length - 1) { size /= 1024; i++; }
    return i ? size.toFixed(1) + " " + units[i] : size + " B";
  }

  // Orders for the server go one at a time through the hidden #m3-attach-apply button (its click reads order()).
  const orders = [];
  function command(order) {
    const apply = $("#m3-attach-apply");
    if (!apply) return;
    orders.push(JSON.stringify(order));
    apply.click();
  }
  function order() {
    // "always_last": clicks made while one runs are one call; removals are by index, so send them all at once.
    const batch = orders.splice(0).map((o) => JSON.parse(o));
    return JSON.stringify(batch.length === 1 ? batch[0] : { batch });
  }

  function attachedCount() {
    return document.querySelectorAll("#m3-attachments .m3-chip:not(.m3-chip-refused)").length;
  }

  function forward(fileList) {
    const files = Array.from(fileList || []);
    if (!files.length) return;
    const refused = [], send = [];
    let room = MAX_FILES - attachedCount();
    for (const file of files) {
      if (file.size > MAX_BYTES) {
        refused.push({ name: file.name, why: `${human(file.size)}: larger than the ${human(MAX_BYTES)} cap for one ` +
                      "file (not uploaded)" });
      } else if (room > 0) { send.push(file); room--; }
    }
    const extra = files.length - refused.length - send.length;
    if (extra > 0) {
      refused.push({ name: `${extra} more file${extra === 1 ? "" : "s"}`,
                     why: `not read: at most ${MAX_FILES} files per message (${files.length} given)` });
    }
    if (refused.length) command({ refused });
    const input = $("#m3-attach-files input[type=file]");
    if (send.length && input) {
      const carrier = new DataTransfer();
      send.forEach((f) => carrier.items.add(f));
      input.files = carrier.files;
      input.dispatchEvent(new Event("change", { bubbles: true }));
    }
  }

  document.addEventListener("change", (event) => {
    if (event.target && event.target.id === "m3-attach") {
      forward(event.target.files);
      event.target.value = ""; // the same file can be picked again
    }
  });
  document.addEventListener("click", (event) => {
    const remove = event.target.closest && event.target.closest("#m3-attachments [data-remove]");
    if (remove) command({ remove: Number(remove.dataset.remove) });
  });
  const inChat = (event) => event.target.closest && event.target.closest(".m3-chat-main");
  document.addEventListener("dragover", (event) => {
    if (!inChat(event) || !event.dataTransfer || !Array.from(event.dataTransfer.types).includes("Files")) return;
    event.preventDefault();
    inChat(event).classList.add("m3-dropping");
  });
  document.addEventListener("dragleave", (event) => {
    const zone = inChat(event);
    if (zone && !zone.contains(event.relatedTarget)) zone.classList.remove("m3-dropping");
  });
  document.addEventListener("drop", (event) => {
    const zone = inChat(event);
    if (!zone || !event.dataTransfer || !event.dataTransfer.files.length) return;
    if (event.target.closest("#m3-attach-files")) return; // Gradio's own drop zone takes it
    event.preventDefault();
    zone.classList.remove("m3-dropping");
    forward(event.dataTransfer.files);
  });
  document.addEventListener("paste", (event) => {
    if (!event.target.closest || !event.target.closest("#m3-message")) return;
    const files = event.clipboardData && event.clipboardData.files;
    if (files && files.length) { event.preventDefault(); forward(files); }
  });

  // The meter's typed part, between the server's updates (which count it exactly when the question goes).
  document.addEventListener("input", (event) => {
    if (!event.target.closest || !event.target.closest("#m3-message")) return;
    const meter = $("#m3-context-meter .m3-meter");
    if (!meter) return;
    const used = Number(meter.dataset.used) + Math.ceil(event.target.value.length / CHARS_PER_TOKEN);
    const limit = Number(meter.dataset.limit);
    $(".m3-meter-text", meter).textContent = `context ${used.toLocaleString("en")} / ${limit.toLocaleString("en")} ` +
      "tokens" + (used > limit ? ` — ${(used - limit).toLocaleString("en")} over` : "");
    meter.classList.toggle("m3-meter-over", used > limit);
  });

  // The chat changed (an answer ended, another chat was picked): the server counts the meter again.
  let recount = null;
  const streaming = () => { const stop = $("#m3-stop"); return !!stop && stop.offsetParent !== null; };
  function watchChat() {
    const chatbot = $("#m3-chatbot");
    if (!chatbot) { setTimeout(watchChat, 500); return; }
    const settled = () => { recount = streaming() ? setTimeout(settled, 600) : null; if (!recount) command({ refresh: 1 }); };
    new MutationObserver(() => {
      clearTimeout(recount);
      recount = setTimeout(settled, 600);
    }).observe(chatbot, { childList: true, subtree: true });
  }
  window.addEventListener("load", watchChat);

  // A question with attachments is not sent early (m3ui/live/early_ask.py): the server joins the files first.
  // (live.js sets window.m3uiLive; checked until it is there, and again should it be replaced)
  setInterval(() => {
    const live = window.m3uiLive;
    if (!live || !live.ask || live.ask.m3Attach) return;
    const ask = live.ask;
    live.ask = (...args) => (attachedCount() ? undefined : ask(...args));
    live.ask.m3Attach = true;
  }, 500);

  // The prefill progress: from the click until the first token, at the expected rate (the server's figures).
  let timer = null;
  function prefill(figures) {
    if (timer) clearInterval(timer);
    const old = $("#m3-prefill-progress");
    if (old) old.remove();
    if (!figures || !figures.seconds) return;
    const chatbot = $("#m3-chatbot");
    if (!chatbot) return;
    const box = document.createElement("div");
    box.id = "m3-prefill-progress";
    box.setAttribute("role", "progressbar");
    box.innerHTML = '<div class="m3-prefill-bar"><div></div></div><span class="m3-prefill-text"></span>';
    chatbot.after(box);
    const started = performance.now();
    let seenWaiting = false;
    const tick = () => {
      const elapsed = (performance.now() - started) / 1000;
      const share = Math.min(0.99, elapsed / figures.seconds);
      $(".m3-prefill-bar div", box).style.width = (share * 100).toFixed(1) + "%";
      box.setAttribute("aria-valuenow", String(Math.round(share * 100)));
      const rate = Math.round(figures.tokens / Math.max(figures.seconds, 0.001)).toLocaleString("en");
      $(".m3-prefill-text", box).textContent = `Reading ${figures.tokens.toLocaleString("en")} tokens: ` +
        `${elapsed.toFixed(1)} s of ≈${figures.seconds.toFixed(1)} s (${rate} tok/s, ${figures.source})`;
      const stop = $("#m3-stop");
      const messages = chatbot.querySelectorAll(".message");
      const last = messages[messages.length - 1];
      const waiting = !!last && last.textContent.includes(WAITING);
      seenWaiting = seenWaiting || waiting;
      const stopped = !stop || stop.offsetParent === null;
      if ((seenWaiting && !waiting) || (stopped && elapsed > 1)) { clearInterval(timer); timer = null; box.remove(); }
    };
    tick();
    timer = setInterval(tick, 200);
  }

  window.m3uiAttach = { forward, prefill, order, count: attachedCount };
})();
