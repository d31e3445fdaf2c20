"""The Chat tab: streaming chat with M3's thinking modes, per-message stats, saved chats per browser, export.

The source of truth is a ChatLibrary (m3ui.conversation.library) kept per page in gr.State and mirrored into the
browser's localStorage, one record per chat, by the page script (assets/js/chat.js): the page's chats come
from there at load, every change goes back as records in `outbox`, and a change made by another page of the
same browser is merged in (`sync`). The Chatbot is only its rendering.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import gradio as gr

from m3ui.accounts.saved_prompts import SavedPrompts
from m3ui.accounts.server_chats import ServerChats
from m3ui.client import GenerationSettings
from m3ui.client.settings import GREEDY_TEMPERATURE, MAX_STALL_SECONDS, MIN_STALL_SECONDS
from m3ui.legacy_chats import LEGACY_STORAGE_KEY, legacy_secret
from m3ui.services import AppServices
from m3ui.ui.chat.attachments import AttachmentsController, AttachmentsView, before_send, wire_attachments
from m3ui.ui.chat.browser_import import build_import_offer
from m3ui.ui.chat.controller import FORM, LIST_LABEL, ChatController
from m3ui.ui.chat.controls import CHAT_BOX_HEIGHT, STREAMING_LISTENER, chat_runner, thinking_mode_radio
from m3ui.ui.chat.following import FOLLOWED
from m3ui.ui.chat.live_view import OPEN_JS, LivePage, LiveSlots, build_live_slots
from m3ui.ui.chat.saved_prompts import (
    BrowserPrompts,
    PromptsView,
    SavedPromptsController,
    ServerPrompts,
    wire_saved_prompts,
)
from m3ui.ui.chat.server_library import ServerLibrary
from m3ui.ui.chat.view_slots import SLOTS, Slots

PLACEHOLDER = ("**Chat with MiniMax-M3**\n\nPick a thinking mode under *Thinking mode*, and a saved system prompt "
               "under *Saved prompts*, in the settings. The reasoning streams into a block that folds away when the "
               "answer starts; each answer shows its timing and token counts.")
HINT = ("✎ on a question edits it and sends it again: the answers after it are replaced (Undo brings them back). "
        "Click a message to retry or remove it. Esc stops an answer; Enter while one streams queues your message. "
        "? lists the keyboard shortcuts.")
KEEP_REASONING_INFO = "Off: earlier answers' reasoning is not sent back (M3's recommended default; saves context)."
STALL_INFO = "Give up on an answer when the engine sends nothing for this long."
TOOLS_INFO = ("This chat's answers may call the built-in demo tools (weather, calculator, units, time, docs search); "
              "each call shows in the chat. Approval and custom tools: the Tools tab.")
# Inline $…$ as well as display $$…$$ and the LaTeX brackets models also write.
LATEX_DELIMITERS: list[dict[str, str | bool]] = [
    {"left": "$$", "right": "$$", "display": True}, {"left": "$", "right": "$", "display": False},
    {"left": "\\(", "right": "\\)", "display": False}, {"left": "\\[", "right": "\\]", "display": True}]
DEFAULTS = GenerationSettings()
# The page script's entry points (assets/js/chat.js): what the browser stores, downloads, and the drawer.
# Attached documents' bodies are kept in IndexedDB, not in the records (assets/js/attach.js keep/restore).
READ_BROWSER_JS = ("async (browser, legacy, page) => [await window.m3uiAttach.restore(window.m3uiChats.read()), "
                   "legacy, window.m3uiLive.ticket()]")
SYNC_BROWSER_JS = "async (library, browser) => [library, await window.m3uiAttach.restore(window.m3uiChats.read())]"
WRITE_BROWSER_JS = "(records) => { window.m3uiAttach.keep(records, window.m3uiChats.write); }"
DOWNLOAD_JS = "(document) => { window.m3uiChats.download(document); }"
TIMES_JS = "(times) => { window.m3uiChats.times(times); }"
TOGGLE_DRAWER_JS = "() => { window.m3uiChats.toggleDrawer(); }"
# The page turns itself busy when an answer is asked for, at the click, so that no frame of the answer has to
# carry the message box or the buttons (m3ui.ui.chat.following): outputs [send, stop, continue], and for a question
# [asked, message, send, stop, continue] (the question moves out of the box; an empty one leaves everything as it
# was). Continue hides while an answer streams; `finish` shows it again when the last answer was cut.
# Asking also opens the page's live channel, which the answer's frames take while it streams (m3ui.live).
BUSY = ("{__type__: 'update', visible: false}, {__type__: 'update', visible: true}, "
        "{__type__: 'update', visible: false}")
BUSY_JS = f"() => {{ {OPEN_JS}; return [{BUSY}]; }}"
# It also tells the server at once what it asks, with the form's settings (m3ui.live.early_ask). Attached files
# with nothing typed are a question too: the files are what is asked about (assets/js/attach.js).
ASK_JS = (f"(text, ...form) => {{ if (!(text || '').trim() && !window.m3uiAttach?.count()) "
          f"return [text, undefined, undefined, undefined, undefined]; {OPEN_JS}; "
          f"window.m3uiLive.ask(text, {json.dumps(FORM)}, form); "
          f"return [text, '', {BUSY}]; }}")


@dataclass
class ChatTabUI:
    library: gr.State
    outbox: gr.JSON
    browser: gr.JSON
    legacy: gr.BrowserState | gr.State  # chats saved the old way (m3ui.legacy_chats); a State when there are none
    sync: gr.Button
    drawer: gr.Button
    new_chat: gr.Button
    search: gr.Textbox
    chat_picker: gr.Radio
    title: gr.Textbox
    rename: gr.Button
    delete: gr.Button
    export_md: gr.Button
    export_json: gr.Button
    download: gr.JSON
    undo: gr.Button
    chatbot: gr.Chatbot
    selected: gr.State
    message_actions: gr.Row
    selected_label: gr.Markdown
    versions: gr.Row
    version_label: gr.Markdown
    version_prev: gr.Button
    version_next: gr.Button
    message_times: gr.JSON
    retry_from: gr.Button
    delete_exchange: gr.Button
    message: gr.Textbox
    send: gr.Button
    stop: gr.Button
    regenerate: gr.Button
    continue_answer: gr.Button
    clear: gr.Button
    thinking_mode: gr.Radio
    temperature: gr.Slider
    top_p: gr.Slider
    max_tokens: gr.Number
    stall_seconds: gr.Number
    greedy: gr.Button
    defaults: gr.Button
    keep_reasoning: gr.Checkbox
    system_prompt: gr.Textbox
    tools: gr.Checkbox
    following: gr.State  # an answer's stream hands this to `finish` (m3ui.ui.chat.following)
    attachments: AttachmentsView | None = None
    prompts: PromptsView | None = None  # the saved system prompts (m3ui.ui.chat.saved_prompts)

    @property
    def slots(self) -> Slots:
        """The components the controller's handlers set, by name (m3ui.ui.chat.view_slots)."""
        return Slots({name: getattr(self, name) for name in (*SLOTS, *FOLLOWED, "selected", "selected_label")})

    @property
    def settings(self) -> list[gr.components.Component]:
        return [getattr(self, name) for name in FORM]  # in the answer handlers' order


def build_chat_tab(services: AppServices, page: gr.Blocks) -> ChatTabUI:
    """With a login and accounts, the chats and saved prompts are kept on the server per person
    (m3ui.ui.chat.server_library, m3ui.ui.chat.saved_prompts); otherwise in the browser's storage."""
    accounts = services.policy.accounts if services.policy.chat_login else None
    server = ServerLibrary(ServerChats(accounts)) if accounts is not None else None
    placeholder = gr.Column() if server is not None else None  # the import offer goes first, built once ui exists
    ui = _layout(legacy_secret(services.data_dir))
    chat = ChatController(chat_runner(services), server, LivePage(services.live_feeds, ui.chatbot,
                                                                 lambda *who: services.live_holder(*who)))
    services.send_early = chat.send_early
    assert ui.attachments is not None and ui.prompts is not None
    attach = wire_attachments(ui.attachments, services, server is None, ui.library, ui.system_prompt, ui.max_tokens,
                              ui.message)
    keeper = ServerPrompts(SavedPrompts(accounts)) if accounts is not None else BrowserPrompts()
    _wire(ui, chat, build_live_slots(ui.chatbot, page), page, attach, SavedPromptsController(keeper, chat, ui.prompts))
    if server is not None and placeholder is not None:
        with placeholder:
            build_import_offer(server, ui.library, ui.browser, ui.slots.keyed(chat.sync, SLOTS), page)
    return ui


def _layout(legacy_key: str | None) -> ChatTabUI:
    legacy = gr.BrowserState(None, storage_key=LEGACY_STORAGE_KEY, secret=legacy_key) if legacy_key else gr.State(None)
    library = gr.State(None)  # a page's own library comes from its browser at load (see ChatController.owned)
    outbox = gr.JSON(None, visible=False)  # records for the browser to store (chat.js writes them)
    browser = gr.JSON(None, visible=False)  # what the browser holds, read by chat.js for load and sync
    download = gr.JSON(None, visible=False)  # an export for chat.js to hand to the browser as a download
    message_times = gr.JSON(None, visible=False)  # when each message shown was written, for chat.js's tooltips
    sync = gr.Button("sync", visible="hidden", elem_id="m3-chat-sync")  # clicked by chat.js
    with gr.Row(equal_height=False, elem_classes=["m3-chat"]):
        with gr.Column(scale=1, min_width=230, elem_classes=["m3-sidebar"], elem_id="m3-sidebar"):
            gr.Button("✕ Close", size="sm", elem_id="m3-chats-close")  # the phone's drawer (chat.js closes it)
            new_chat = gr.Button("+ New chat", size="sm", elem_id="m3-new-chat")
            search = gr.Textbox(placeholder="Search chats (titles and text)", show_label=False, max_lines=1,
                                elem_id="m3-chat-search")
            title = gr.Textbox(label="Title", max_lines=1, elem_id="m3-chat-title")
            with gr.Row(elem_classes=["m3-chat-actions"]):
                rename = gr.Button("Rename", size="sm", min_width=60, elem_id="m3-rename-chat")
                delete = gr.Button("Delete", size="sm", min_width=60, elem_id="m3-delete-chat")
            with gr.Row(elem_classes=["m3-chat-actions"]):
                export_md = gr.Button("⬇ Markdown", size="sm", min_width=60, elem_id="m3-export-md")
                export_json = gr.Button("⬇ JSON", size="sm", min_width=60, elem_id="m3-export-json")
            undo = gr.Button("↶ Undo", size="sm", visible=False, variant="secondary", elem_id="m3-undo")
            chat_picker = gr.Radio([], label=LIST_LABEL, elem_id="m3-chat-list")
        with gr.Column(scale=4, min_width=320, elem_classes=["m3-chat-main"]):
            drawer = gr.Button("☰ Chats", size="sm", elem_id="m3-chats-toggle")
            chatbot = gr.Chatbot(height=CHAT_BOX_HEIGHT, show_label=False, elem_id="m3-chatbot",
                                 placeholder=PLACEHOLDER, feedback_options=None, buttons=["copy", "copy_all"],
                                 group_consecutive_messages=False, editable="user", latex_delimiters=LATEX_DELIMITERS)
            with gr.Row(visible=False, equal_height=True, elem_id="m3-versions") as versions:  # ‹ n/N › answers
                version_prev = gr.Button("‹", size="sm", min_width=36, elem_id="m3-version-prev")
                version_label = gr.Markdown("", elem_id="m3-version-label")
                version_next = gr.Button("›", size="sm", min_width=36, elem_id="m3-version-next")
            selected = gr.State(None)  # the turn index of the question a click on a message picked
            with gr.Row(visible=False, equal_height=True, elem_id="m3-message-actions") as message_actions:
                selected_label = gr.Markdown("")
                retry_from = gr.Button("↻ Retry from here", size="sm", elem_id="m3-retry-from")
                delete_exchange = gr.Button("✕ Remove question and answer", size="sm",
                                            elem_id="m3-delete-exchange")
            attachments = AttachmentsView.build()
            with gr.Row(equal_height=True, elem_classes=["m3-composer"]):
                message = gr.Textbox(placeholder="Message MiniMax-M3…  (Enter sends, Shift+Enter: new line)",
                                     show_label=False, lines=1, max_lines=10, scale=8, elem_id="m3-message",
                                     autofocus=True)
                send = gr.Button("Send", variant="primary", scale=1, min_width=80, elem_id="m3-send")
                stop = gr.Button("■ Stop", variant="stop", scale=1, min_width=80, visible=False, elem_id="m3-stop")
            with gr.Row(elem_classes=["m3-chat-tools"]):
                regenerate = gr.Button("↻ Regenerate", size="sm", elem_id="m3-regenerate")
                continue_answer = gr.Button("→ Continue", size="sm", visible=False, elem_id="m3-continue")
                clear = gr.Button("Clear", size="sm", elem_id="m3-clear")
            gr.Markdown(HINT, elem_classes=["m3-chat-hint"])
        with gr.Column(scale=2, min_width=260, elem_classes=["m3-settings"]):
            thinking_mode = thinking_mode_radio()
            tools = gr.Checkbox(False, label="Tools", info=TOOLS_INFO, elem_id="m3-chat-tools")  # kept per chat
            with gr.Accordion("Generation settings", open=True):
                temperature = gr.Slider(0.0, 2.0, value=DEFAULTS.temperature, step=0.05, label="Temperature",
                                        elem_id="m3-temperature")
                top_p = gr.Slider(0.05, 1.0, value=DEFAULTS.top_p, step=0.01, label="Top-p")
                max_tokens = gr.Number(DEFAULTS.max_tokens, minimum=1, precision=0, label="Max tokens",
                                       elem_id="m3-max-tokens")
                stall_seconds = gr.Number(DEFAULTS.stall_seconds, minimum=MIN_STALL_SECONDS,
                                          maximum=MAX_STALL_SECONDS, label="Stall limit (s)", info=STALL_INFO,
                                          elem_id="m3-stall-seconds")
                with gr.Row():
                    greedy = gr.Button(f"Greedy (temperature {GREEDY_TEMPERATURE:g})", size="sm", min_width=60)
                    defaults = gr.Button("Defaults", size="sm", min_width=60)
                keep_reasoning = gr.Checkbox(False, label="Send earlier reasoning back", info=KEEP_REASONING_INFO)
            system_prompt = gr.Textbox(label="System prompt", lines=3, max_lines=12, placeholder="Optional",
                                       elem_id="m3-system-prompt")
            prompts = PromptsView.build()
    return ChatTabUI(library, outbox, browser, legacy, sync, drawer, new_chat, search, chat_picker, title, rename,
                     delete, export_md, export_json, download, undo, chatbot, selected, message_actions, selected_label,
                     versions, version_label, version_prev, version_next, message_times,
                     retry_from, delete_exchange, message, send, stop, regenerate, continue_answer, clear,
                     thinking_mode, temperature, top_p, max_tokens, stall_seconds, greedy, defaults, keep_reasoning,
                     system_prompt, tools, gr.State(None), attachments, prompts)


def _wire(ui: ChatTabUI, chat: ChatController, live_slots: LiveSlots, page: gr.Blocks,
          attach: AttachmentsController, prompts: SavedPromptsController) -> None:
    """Every handler returns its values keyed by slot name (m3ui.ui.chat.view_slots): outputs in any order."""
    assert ui.attachments is not None and ui.prompts is not None  # built with the tab (build_chat_tab)
    slots = ui.slots
    # The library's own actions take turns (they are quick): a sync computed from the library as it was before a
    # concurrent switch or rename would otherwise undo it on the page.
    quick: dict[str, Any] = {"concurrency_id": "chat-library", "concurrency_limit": 1, "show_progress": "hidden"}
    settings = [*ui.settings, live_slots.ticket]  # and the page's live channel (m3ui.ui.chat.live_view)
    asked = gr.Textbox(visible=False)  # the question, taken out of the message box by the page (ASK_JS)
    busy = [ui.send, ui.stop]
    turned_busy = [*busy, ui.continue_answer]  # BUSY's outputs
    asking = gr.on([ui.message.submit, ui.send.click], None, [ui.message, *ui.settings],
                   [asked, ui.message, *turned_busy], js=ASK_JS)
    for triggers in ([ui.regenerate.click, ui.chatbot.retry], [ui.chatbot.edit], [ui.retry_from.click],
                     [ui.continue_answer.click]):
        gr.on(triggers, None, None, turned_busy, js=BUSY_JS)
    answers = [
        # "multiple": a question the page took out of the box is always sent (a refused one comes back)
        before_send(ui.attachments, attach, asking, asked, ui.library, ui.system_prompt, ui.max_tokens, ui.message,
                    busy).success(inputs=[asked, ui.library, *settings], **slots.keyed(chat.send, FOLLOWED),
                                  trigger_mode="multiple", **STREAMING_LISTENER),
        gr.on([ui.regenerate.click, ui.chatbot.retry], inputs=[ui.library, *settings],
              **slots.keyed(chat.regenerate, FOLLOWED), **STREAMING_LISTENER),
        ui.chatbot.edit(inputs=[ui.library, *settings], **slots.keyed(chat.edit, FOLLOWED), **STREAMING_LISTENER),
        ui.continue_answer.click(inputs=[ui.library, *settings], **slots.keyed(chat.continue_answer, FOLLOWED),
                                 **STREAMING_LISTENER),
        ui.retry_from.click(inputs=[ui.library, ui.selected, *settings], **slots.keyed(chat.retry_from, FOLLOWED),
                            **STREAMING_LISTENER),
    ]
    for answer in answers:
        answer.then(inputs=[ui.following], **slots.keyed(chat.finish, (*SLOTS, "following")), **quick)
    ui.stop.click(chat.stop, None, None, queue=False)
    ui.chatbot.select(inputs=[ui.library], **slots.keyed(chat.select, ("selected", "message_actions",
                                                                       "selected_label")), **quick)
    ui.delete_exchange.click(inputs=[ui.library, ui.selected], **slots.keyed(chat.delete_exchange, SLOTS), **quick)
    ui.version_prev.click(inputs=[ui.library], **slots.keyed(chat.previous_version, SLOTS), **quick)
    ui.version_next.click(inputs=[ui.library], **slots.keyed(chat.next_version, SLOTS), **quick)
    # (New chat is wired there: it starts with the person's default saved prompt, when there is one)
    wire_saved_prompts(ui.prompts, prompts, slots, ui.library, ui.system_prompt, ui.new_chat, page, quick)
    ui.chat_picker.input(inputs=[ui.library, ui.chat_picker], **slots.keyed(chat.switch, SLOTS), preprocess=False,
                         **quick)
    ui.search.change(inputs=[ui.library, ui.search], **slots.keyed(chat.search, SLOTS), **quick)
    gr.on([ui.rename.click, ui.title.submit], inputs=[ui.library, ui.title], **slots.keyed(chat.rename, SLOTS),
          **quick)
    ui.delete.click(inputs=[ui.library], **slots.keyed(chat.delete, SLOTS), **quick)
    gr.on([ui.clear.click, ui.chatbot.clear], inputs=[ui.library], **slots.keyed(chat.clear, SLOTS), **quick)
    ui.undo.click(inputs=[ui.library], **slots.keyed(chat.undo, SLOTS), **quick)
    for button, kind in ((ui.export_md, "md"), (ui.export_json, "json")):
        button.click(lambda library, kind=kind: chat.export(library, kind), [ui.library], ui.download, **quick
                     ).success(None, [ui.download], None, js=DOWNLOAD_JS)
    ui.outbox.change(None, [ui.outbox], None, js=WRITE_BROWSER_JS)
    ui.message_times.change(None, [ui.message_times], None, js=TIMES_JS)
    # A save that lands while a sync is on its way gets a sync of its own after it (Gradio would drop the click).
    ui.sync.click(inputs=[ui.library, ui.browser], **slots.keyed(chat.sync, SLOTS), js=SYNC_BROWSER_JS,
                  trigger_mode="always_last", **quick)
    ui.drawer.click(None, None, None, js=TOGGLE_DRAWER_JS)
    instant: dict[str, Any] = {"queue": False, "show_progress": "hidden"}
    ui.greedy.click(lambda: GREEDY_TEMPERATURE, None, ui.temperature, **instant)
    ui.defaults.click(inputs=None, **slots.keyed(_defaults, FORM[:5]), **instant)
    # the saved chats come back when the page (re)loads
    page.load(inputs=[ui.browser, ui.legacy, live_slots.ticket], **slots.keyed(chat.load, SLOTS), js=READ_BROWSER_JS,
              **instant)


def _defaults() -> dict[str, object]:
    """The generation settings' defaults, for the form's Defaults button."""
    return {name: getattr(DEFAULTS, name) for name in FORM[:5]}
