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
  // Gradio may run this script after the page's load event (a head script it adds itself): then at once.
  const onLoad = (run) => (document.readyState === "complete" ? run() : window.addEventListener("load", run));

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
    recount = setTimeout(settled, 600); // the chat a (re)load brought may be in it already: counted once now
  }
  onLoad(watchChat);

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

  // Without an account, chats live in this browser (assets/js/chat.js, localStorage: about 5 MB for them all).
  // The bodies of attached documents go to IndexedDB instead (its quota is a share of the disk), keyed by their
  // SHA-256; the chat's record keeps a reference in the body's place. keep() strips records before chat.js writes
  // them, restore() puts the bodies back into what chat.js read, before the server gets it. A body that cannot
  // be put in IndexedDB stays in the record (chat.js then says if the storage is full): nothing is lost unsaid.
  const DB = "m3ui-documents", STORE = "bodies";
  const INLINE = 4096; // bodies up to this many chars stay in the record
  const KEPT = "\u0000m3ui-kept:"; // the reference: KEPT + sha256 hex, the whole body
  const BLOCK = /(<document name="[^"]*" size="[^"]*">\n)([\s\S]*?)(\n<\/document>)/g; // m3ui/documents/attachment.py
  const LOST = "[this document's text was not found in this browser's storage]";
  let opened = null;
  function db() {
    if (!opened) {
      opened = new Promise((resolve, reject) => {
        if (!window.indexedDB) { reject(new Error("no IndexedDB")); return; }
        const request = indexedDB.open(DB, 1);
        request.onupgradeneeded = () => request.result.createObjectStore(STORE);
        request.onsuccess = () => resolve(request.result);
        request.onerror = () => reject(request.error);
      });
      opened.catch(() => { opened = null; });
    }
    return opened;
  }
  function done(tx) {
    return new Promise((resolve, reject) => {
      tx.oncomplete = resolve; tx.onerror = tx.onabort = () => reject(tx.error);
    });
  }
  async function digest(text) {
    const hash = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
    return Array.from(new Uint8Array(hash), (b) => b.toString(16).padStart(2, "0")).join("");
  }
  const bodies = (text) => Array.from(text.matchAll(BLOCK), (m) => m[2]);

  // Every string of a record (turns' contents, tool results) passed through `change`, a new record.
  function mapStrings(value, change) {
    if (typeof value === "string") return change(value);
    if (Array.isArray(value)) return value.map((v) => mapStrings(v, change));
    if (value && typeof value === "object") {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, k === "hash" || k === "base" || k === "id"
        ? v : mapStrings(v, change)]));
    }
    return value;
  }
  function large(record) {
    const found = [];
    mapStrings(record, (text) => { for (const body of bodies(text)) if (body.length > INLINE) found.push(body); return text; });
    return found;
  }

  const stored = new Map(); // body -> its key, for bodies this page put in IndexedDB
  async function strip(records) { // -> the records as stored, bodies put into IndexedDB (or left in place)
    const found = [...new Set(records.flatMap(large))];
    if (!found.length) return records;
    const refs = new Map();
    try {
      const fresh = found.filter((body) => !stored.has(body)); // an answer streaming saves its chat every second
      const keys = await Promise.all(fresh.map(digest)); // all before the transaction: an await would end it
      if (fresh.length) {
        const tx = (await db()).transaction(STORE, "readwrite");
        fresh.forEach((body, i) => tx.objectStore(STORE).put(body, keys[i]));
        await done(tx);
        fresh.forEach((body, i) => stored.set(body, keys[i]));
      }
      for (const body of found) refs.set(body, stored.get(body));
    } catch (e) {
      return records; // not kept there: the records carry their bodies (and chat.js warns if that is too much)
    }
    return records.map((record) => mapStrings(record, (text) => text.replace(BLOCK, (all, open, body, close) =>
      refs.has(body) ? open + KEPT + refs.get(body) + close : all)));
  }

  async function restoreRecords(records) {
    const keys = new Set();
    for (const record of records) {
      mapStrings(record, (text) => {
        for (const body of bodies(text)) if (body.startsWith(KEPT)) keys.add(body.slice(KEPT.length));
        return text;
      });
    }
    if (!keys.size) return records;
    const found = new Map();
    try {
      const store = (await db()).transaction(STORE).objectStore(STORE);
      await Promise.all([...keys].map((key) => new Promise((resolve) => {
        const request = store.get(key);
        request.onsuccess = () => { if (typeof request.result === "string") found.set(key, request.result); resolve(); };
        request.onerror = () => resolve();
      })));
    } catch (e) { /* no IndexedDB now: each reference reads as not found */ }
    return records.map((record) => mapStrings(record, (text) => text.replace(BLOCK, (all, open, body, close) =>
      body.startsWith(KEPT) ? open + (found.get(body.slice(KEPT.length)) ?? LOST) + close : all)));
  }

  // Writes go one after another, in order: chat.js compares each record with the version it was made from.
  let writing = Promise.resolve();
  function keep(records, write) {
    const documents = Array.isArray(records) && records.some((r) => large(r).length);
    writing = writing.then(() => (documents ? strip(records) : records)).then(write).catch(() => {});
    return writing;
  }
  async function restore(reply) {
    await writing; // a read sees every write asked for before it
    return reply && Array.isArray(reply.records) ? { ...reply, records: await restoreRecords(reply.records) } : reply;
  }

  // Chats saved before this kept their documents in the record: moved once into IndexedDB, the record otherwise
  // unchanged (same hash: no page sees a change of content).
  async function migrate() {
    const PREFIX = "m3ui-chat:"; // assets/js/chat.js
    for (const key of Object.keys(localStorage).filter((k) => k.startsWith(PREFIX))) {
      let record;
      try { record = JSON.parse(localStorage.getItem(key)); } catch (e) { continue; }
      if (!record || !large(record).length) continue;
      const [light] = await strip([record]);
      if (light === record) return; // IndexedDB refused: leave them all as they are
      const now = localStorage.getItem(key);
      try { if (now && JSON.parse(now).hash === record.hash) localStorage.setItem(key, JSON.stringify(light)); } catch (e) { /* kept as it was */ }
    }
  }
  onLoad(() => { writing = writing.then(migrate).catch(() => {}); });

  // A chip whose text this browser has no room for says so (only when chats live in the browser).
  async function markUnkept() {
    const chips = document.querySelectorAll("#m3-attachments .m3-chip[data-keep-chars]:not([data-keep-checked])");
    if (!chips.length) return;
    let room = 0;
    try {
      await db();
      const { quota = 0, usage = 0 } = await navigator.storage.estimate();
      room = quota - usage;
    } catch (e) { room = 0; }
    for (const chip of chips) {
      chip.dataset.keepChecked = "1";
      const chars = Number(chip.dataset.keepChars);
      if (chars > INLINE && chars * 3 > room) { // UTF-8 at worst 3 bytes a char
        const note = document.createElement("span");
        note.className = "m3-chip-error m3-chip-unkept";
        note.setAttribute("role", "alert");
        note.textContent = "too large to keep in this browser: it is sent, but a reload loses this chat " +
          "(sign in to keep it on the server)";
        chip.insertBefore(note, chip.querySelector(".m3-chip-remove"));
      }
    }
  }
  function watchChips() {
    const chips = $("#m3-attachments");
    if (!chips) { setTimeout(watchChips, 500); return; }
    new MutationObserver(markUnkept).observe(chips, { childList: true, subtree: true });
  }
  onLoad(watchChips);

  window.m3uiAttach = { forward, prefill, order, count: attachedCount, keep, restore };
})();
