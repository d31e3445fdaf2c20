// The Chat tab's page script (m3ui/ui/chat/view.py calls window.m3uiChats):
// - saved chats: one localStorage key per chat. A record is written only over the version it was made from
//   (its "base" hash); when another page of this browser changed that chat meanwhile, ours is kept as a copy.
//   Either way nothing any page wrote is lost. A change by another page makes this page merge them in (sync):
//   told by the browser's storage event, and, in case that came before this page could take it (a page still
//   loading), by a look at the stored chats every second.
// - exports arrive as text and are handed to the browser as a download (nothing is written on the server);
// - at phone width the chat list is a drawer;
// - a clicked message is highlighted while its Retry/Remove bar is shown;
// - while the pointer is on the chat list, a sync waits: it would reorder the list (newest first), and Gradio's
//   radio keeps its rows in place and relabels them, so the row under the pointer would turn into another chat
//   and the person's click would open that one.
(() => {
  const PREFIX = "m3ui-chat:";
  const MIGRATED = "m3ui-chats-migrated"; // set once chats saved the old way are written as records
  const FULL = "This browser's storage is full: the latest change is not saved. Export the chat, or delete old chats.";
  let moved = {}; // chat id -> id of the copy ours was saved as, for the next sync
  // The same, kept until the sync hands the copy's id to the server: an answer streaming meanwhile saves itself
  // about once a second, and each of those saves goes on into the one copy (not a copy of its own each).
  const copies = {};
  let seen = null; // the stored chats as this page last read or wrote them (see fingerprint)
  let lastLook = 0;
  let syncWanted = false;
  let pointing = false; // the pointer is on the chat list

  const $ = (selector) => document.querySelector(selector);
  const visible = (element) => !!element && element.offsetParent !== null;
  const streaming = () => visible($("#m3-stop"));

  function stored(id) {
    try { return JSON.parse(localStorage.getItem(PREFIX + id)); } catch (e) { return null; }
  }

  function fingerprint() { // each stored chat's key and size: cheap, and changed by any save
    const parts = [];
    for (let i = 0; i < localStorage.length; i++) {
      const key = localStorage.key(i);
      if (key && key.startsWith(PREFIX)) parts.push(key + ":" + localStorage.getItem(key).length);
    }
    return parts.sort().join("|");
  }

  function read() {
    seen = fingerprint();
    const records = [];
    for (let i = 0; i < localStorage.length; i++) {
      const key = localStorage.key(i);
      if (key && key.startsWith(PREFIX)) {
        const record = stored(key.slice(PREFIX.length));
        if (record) records.push(record);
      }
    }
    const reply = { records, moved, migrated: localStorage.getItem(MIGRATED) === "1" };
    for (const id of Object.keys(moved)) delete copies[id]; // the server now has the copy's id
    moved = {};
    return reply;
  }

  function newId() {
    return Array.from(crypto.getRandomValues(new Uint8Array(6)), (b) => b.toString(16).padStart(2, "0")).join("");
  }

  function write(batch) {
    if (!Array.isArray(batch)) return;
    const current = fingerprint() === seen; // no other page saved since this one looked
    let merge = false;
    try {
      for (const { base, ...record } of batch) {
        if (!record || typeof record.id !== "string") continue;
        if (copies[record.id] && !record.deleted) {
          const id = copies[record.id];
          localStorage.setItem(PREFIX + id, JSON.stringify({ ...record, id, title: "Copy: " + record.title }));
          moved[record.id] = id;
          continue;
        }
        const now = stored(record.id);
        if (record.deleted) {
          if (now && now.hash !== base) merge = true; // changed elsewhere since this page saw it: kept
          else localStorage.removeItem(PREFIX + record.id);
        } else if (!now || now.hash === record.hash || now.hash === base) {
          localStorage.setItem(PREFIX + record.id, JSON.stringify(record));
        } else { // another page changed this chat since this page read it: keep both
          const copy = { ...record, id: newId(), title: "Copy: " + record.title };
          localStorage.setItem(PREFIX + copy.id, JSON.stringify(copy));
          moved[record.id] = copies[record.id] = copy.id;
          merge = true;
        }
      }
      if (batch.length) localStorage.setItem(MIGRATED, "1");
      if (current && !merge) seen = fingerprint(); // else the next look finds the other page's save
      warn("");
    } catch (e) {
      warn(FULL);
    }
    if (merge) requestSync();
  }

  function warn(text) {
    let note = $("#m3-storage-warning");
    const sidebar = $("#m3-sidebar");
    if (!note && text && sidebar) {
      note = document.createElement("div");
      note.id = "m3-storage-warning";
      note.className = "m3-note m3-note-error";
      sidebar.prepend(note);
    }
    if (note) { note.textContent = text; note.hidden = !text; }
  }

  // A sync while this page streams would be overwritten by the answer's last update: wait for the end.
  function requestSync() { syncWanted = true; }

  const onList = (node) => !!(node && node.closest && node.closest("#m3-chat-list"));
  document.addEventListener("pointerover", (event) => { pointing = onList(event.target); });
  document.addEventListener("pointerout", (event) => { if (!event.relatedTarget) pointing = false; }); // left the page

  function download(doc) {
    if (!doc || typeof doc.name !== "string") return;
    const type = doc.kind === "json" ? "application/json" : "text/markdown";
    const url = URL.createObjectURL(new Blob([doc.text], { type: type + ";charset=utf-8" }));
    const link = document.createElement("a");
    link.href = url;
    link.download = doc.name;
    document.body.appendChild(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
  }

  function toggleDrawer(open) {
    const sidebar = $("#m3-sidebar");
    if (!sidebar) return;
    const shown = sidebar.classList.toggle("m3-open", open);
    let backdrop = $("#m3-drawer-backdrop");
    if (!backdrop && shown) {
      backdrop = document.createElement("div");
      backdrop.id = "m3-drawer-backdrop";
      document.body.appendChild(backdrop);
    }
    if (backdrop) backdrop.hidden = !shown;
  }

  window.addEventListener("storage", (event) => {
    if (event.key === null || event.key.startsWith(PREFIX)) requestSync();
  });

  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape") toggleDrawer(false);
  });

  const SELECTED = "m3-selected";
  const ROWS = "#m3-chatbot .message-row";
  let selected = -1; // which message row was clicked (the chat box may redraw its rows meanwhile)
  let selectedAt = 0;
  function highlight() {
    document.querySelectorAll(ROWS).forEach((row, i) => row.classList.toggle(SELECTED, i === selected));
  }
  document.addEventListener("click", (event) => { // a message clicked: it is the one the bar acts on
    const row = event.target.closest && event.target.closest(ROWS);
    if (!row || event.target.closest("button, a, textarea")) return;
    selected = [...document.querySelectorAll(ROWS)].indexOf(row);
    selectedAt = Date.now();
    highlight();
  });

  document.addEventListener("click", (event) => { // a chat picked in the drawer, its ✕, or a tap beside it closes it
    const target = event.target.closest ? event.target : null;
    if (!target || target.closest("#m3-chats-toggle")) return;
    if (target.closest("#m3-chat-list input, #m3-chats-close") || !target.closest("#m3-sidebar")) toggleDrawer(false);
  });

  setInterval(() => {
    // The bar closed (or never opened: a click on an answer being written): nothing is selected any more.
    if (!visible($("#m3-message-actions")) && Date.now() - selectedAt > 2000) selected = -1;
    highlight();
    stamp();
    if (streaming()) return;
    if (!syncWanted && seen !== null && Date.now() - lastLook > 1000) {
      lastLook = Date.now();
      if (fingerprint() !== seen) requestSync();
    }
    if (syncWanted && !pointing && $("#m3-chat-sync")) {
      syncWanted = false;
      $("#m3-chat-sync").click();
    }
  }, 300);

  // When each message was written (ISO times from the server, one per message row), shown in the reader's own
  // time when the pointer rests on the message; reapplied as the chat box redraws its rows.
  let times = [];
  function stamp() {
    document.querySelectorAll(ROWS).forEach((row, i) => {
      const at = times[i] ? new Date(times[i]).toLocaleString([], { dateStyle: "medium", timeStyle: "short" }) : "";
      if (row.title !== at) row.title = at;
    });
  }

  window.m3uiChats = { read, write, download, toggleDrawer: () => toggleDrawer(),
                       times: (value) => { times = Array.isArray(value) ? value : []; stamp(); } };
})();
