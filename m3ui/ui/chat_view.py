"""The Chat tab: streaming chat with M3's thinking modes, per-message stats, saved chats per browser, export.

The source of truth is a ChatLibrary (m3ui.conversation_store) kept per page in gr.State and mirrored into the
browser's localStorage (gr.BrowserState), so a reload keeps every chat; the Chatbot is only its rendering.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import gradio as gr
from gradio.context import Context

from m3ui.chat_session import AnswerRequest, ChatRunner, SessionBusy, transcript
from m3ui.client import GenerationSettings
from m3ui.client.settings import GREEDY_TEMPERATURE
from m3ui.conversation import Conversation, LoopOptions
from m3ui.conversation_store import ChatLibrary, SavedChat, browser_state_secret, export_files
from m3ui.services import AppServices
from m3ui.ui.chat_controls import chat_runner, session_key, settings_from_form, thinking_mode_radio
from m3ui.ui.chat_render import render

STORAGE_KEY = "m3ui-chats-v1"
PLACEHOLDER = ("**Chat with MiniMax-M3**\n\nPick a thinking mode on the right. The reasoning streams into a block "
               "that folds away when the answer starts; each answer shows its timing and token counts.")
KEEP_REASONING_INFO = "Off: earlier answers' reasoning is not sent back (M3's recommended default; saves context)."
DEFAULTS = GenerationSettings()


@dataclass
class ChatTabUI:
    store: gr.BrowserState
    library: gr.State
    new_chat: gr.Button
    chat_picker: gr.Radio
    title: gr.Textbox
    rename: gr.Button
    delete: gr.Button
    export_md: gr.DownloadButton
    export_json: gr.DownloadButton
    chatbot: gr.Chatbot
    message: gr.Textbox
    send: gr.Button
    stop: gr.Button
    regenerate: gr.Button
    clear: gr.Button
    thinking_mode: gr.Radio
    temperature: gr.Slider
    top_p: gr.Slider
    max_tokens: gr.Number
    greedy: gr.Button
    defaults: gr.Button
    keep_reasoning: gr.Checkbox
    system_prompt: gr.Textbox

    @property
    def view(self) -> list[gr.components.Component]:
        """Everything that shows the library, the message box and the busy/idle buttons: see ChatController.show."""
        return [self.library, self.store, self.chatbot, self.chat_picker, self.title, self.system_prompt,
                self.export_md, self.export_json, self.message, self.send, self.stop, self.regenerate, self.clear,
                self.new_chat, self.rename, self.delete]

    @property
    def settings(self) -> list[gr.components.Component]:
        return [self.thinking_mode, self.temperature, self.top_p, self.max_tokens, self.keep_reasoning,
                self.system_prompt]


def build_chat_tab(services: AppServices) -> ChatTabUI:
    ui = _layout(services)
    _wire(ui, ChatController(chat_runner(services)))
    return ui


def _layout(services: AppServices) -> ChatTabUI:
    store = gr.BrowserState(None, storage_key=STORAGE_KEY, secret=browser_state_secret(services.data_dir))
    library = gr.State(None)  # a page's own library comes from its browser at load (see ChatController.owned)
    with gr.Row(equal_height=False, elem_classes=["m3-chat"]):
        with gr.Column(scale=1, min_width=210, elem_classes=["m3-sidebar"]):
            new_chat = gr.Button("+ New chat", size="sm", elem_id="m3-new-chat")
            chat_picker = gr.Radio([], label="Conversations", elem_id="m3-chat-list")
            title = gr.Textbox(label="Title", max_lines=1, elem_id="m3-chat-title")
            with gr.Row():
                rename = gr.Button("Rename", size="sm", min_width=60)
                delete = gr.Button("Delete", size="sm", min_width=60, elem_id="m3-delete-chat")
            with gr.Row():
                export_md = gr.DownloadButton("⬇ Markdown", size="sm", min_width=60, elem_id="m3-export-md")
                export_json = gr.DownloadButton("⬇ JSON", size="sm", min_width=60, elem_id="m3-export-json")
        with gr.Column(scale=4, min_width=420):
            chatbot = gr.Chatbot(height=620, show_label=False, elem_id="m3-chatbot", placeholder=PLACEHOLDER,
                                 feedback_options=None, buttons=["copy", "copy_all"], group_consecutive_messages=False)
            with gr.Row(equal_height=True, elem_classes=["m3-composer"]):
                message = gr.Textbox(placeholder="Message MiniMax-M3…  (Enter sends, Shift+Enter: new line)",
                                     show_label=False, lines=1, max_lines=10, scale=8, elem_id="m3-message",
                                     autofocus=True)
                send = gr.Button("Send", variant="primary", scale=1, min_width=80, elem_id="m3-send")
                stop = gr.Button("■ Stop", variant="stop", scale=1, min_width=80, visible=False, elem_id="m3-stop")
            with gr.Row():
                regenerate = gr.Button("↻ Regenerate", size="sm", elem_id="m3-regenerate")
                clear = gr.Button("Clear", size="sm", elem_id="m3-clear")
        with gr.Column(scale=2, min_width=260, elem_classes=["m3-settings"]):
            thinking_mode = thinking_mode_radio()
            with gr.Accordion("Generation settings", open=True):
                temperature = gr.Slider(0.0, 2.0, value=DEFAULTS.temperature, step=0.05, label="Temperature")
                top_p = gr.Slider(0.05, 1.0, value=DEFAULTS.top_p, step=0.01, label="Top-p")
                max_tokens = gr.Number(DEFAULTS.max_tokens, minimum=1, precision=0, label="Max tokens")
                with gr.Row():
                    greedy = gr.Button(f"Greedy (temperature {GREEDY_TEMPERATURE:g})", size="sm", min_width=60)
                    defaults = gr.Button("Defaults", size="sm", min_width=60)
                keep_reasoning = gr.Checkbox(False, label="Send earlier reasoning back", info=KEEP_REASONING_INFO)
            system_prompt = gr.Textbox(label="System prompt", lines=3, max_lines=12, placeholder="Optional",
                                       elem_id="m3-system-prompt")
    return ChatTabUI(store, library, new_chat, chat_picker, title, rename, delete, export_md, export_json, chatbot,
                     message, send, stop, regenerate, clear, thinking_mode, temperature, top_p, max_tokens, greedy,
                     defaults, keep_reasoning, system_prompt)


def _wire(ui: ChatTabUI, chat: ChatController) -> None:
    view = ui.view
    # Streaming listeners: no concurrency limit, whatever the app's queue default (Gradio's is 1 per listener).
    streaming = {"concurrency_limit": None, "show_progress": "hidden"}
    gr.on([ui.message.submit, ui.send.click], chat.send, [ui.message, ui.library, *ui.settings], view, **streaming)
    ui.regenerate.click(chat.regenerate, [ui.library, *ui.settings], view, **streaming)
    ui.stop.click(chat.stop, None, None, queue=False)
    ui.new_chat.click(chat.new_chat, [ui.library, ui.system_prompt], view, queue=False)
    ui.chat_picker.input(chat.switch, [ui.library, ui.chat_picker], view, queue=False)
    gr.on([ui.rename.click, ui.title.submit], chat.rename, [ui.library, ui.title], view, queue=False)
    ui.delete.click(chat.delete, [ui.library], view, queue=False)
    gr.on([ui.clear.click, ui.chatbot.clear], chat.clear, [ui.library], view, queue=False)
    ui.greedy.click(lambda: GREEDY_TEMPERATURE, None, ui.temperature, queue=False)
    ui.defaults.click(lambda: (DEFAULTS.thinking_mode, DEFAULTS.temperature, DEFAULTS.top_p, DEFAULTS.max_tokens),
                      None, [ui.thinking_mode, ui.temperature, ui.top_p, ui.max_tokens], queue=False)
    page = Context.root_block
    if page is not None:  # the saved chats come back when the page (re)loads
        page.load(chat.load, [ui.store], view, queue=False)


class ChatController:
    """The tab's handlers: each turns component values into a call on the core objects and the result back
    into component updates (`show`: the whole view; live frames: the chatbot only)."""

    def __init__(self, runner: ChatRunner) -> None:
        self._runner = runner
        self._exports_dir = Path(tempfile.mkdtemp(prefix="m3ui-exports-"))

    def show(self, library: ChatLibrary, busy: bool = False, message: object = None,
             chatbot: list[gr.ChatMessage] | None = None) -> tuple[object, ...]:
        """Values for ChatTabUI.view."""
        chat = library.active
        idle = not busy
        return (
            library, library.to_state(), render(transcript(chat)) if chatbot is None else chatbot,
            gr.update(choices=library.choices(), value=chat.id, interactive=idle), chat.title,
            chat.conversation.system_prompt, *(self._exports(chat) if idle else (gr.skip(), gr.skip())),
            gr.skip() if message is None else message, gr.update(visible=idle), gr.update(visible=busy),
            *(gr.update(interactive=idle) for _ in range(5)),
        )

    def _exports(self, chat: SavedChat) -> tuple[dict[str, object], dict[str, object]]:
        """Written whenever the chat settles, so a click downloads at once (no second click)."""
        if not chat.conversation.turns:
            return gr.update(value=None, interactive=False), gr.update(value=None, interactive=False)
        markdown, document = export_files(chat, self._exports_dir)
        return gr.update(value=markdown, interactive=True), gr.update(value=document, interactive=True)

    def frame(self, chatbot: list[gr.ChatMessage]) -> tuple[object, ...]:
        """A live update: the chatbot only."""
        return (gr.skip(), gr.skip(), chatbot, *(gr.skip() for _ in range(13)))

    def load(self, state: object) -> tuple[object, ...]:
        return self.show(ChatLibrary.from_state(state))

    @staticmethod
    def owned(library: ChatLibrary | None) -> ChatLibrary:
        """The page's library; a page that never loaded one (an API client) gets its own fresh one."""
        return library if library is not None else ChatLibrary.fresh()

    def new_chat(self, library: ChatLibrary | None, system_prompt: str) -> tuple[object, ...]:
        return self.show(self.owned(library).start_new(system_prompt.strip()))

    def switch(self, library: ChatLibrary | None, chat_id: str) -> tuple[object, ...]:
        return self.show(self.owned(library).switch(chat_id))

    def rename(self, library: ChatLibrary | None, title: str) -> tuple[object, ...]:
        library = self.owned(library)
        return self.show(library.rename(library.active_id, title))

    def delete(self, library: ChatLibrary | None) -> tuple[object, ...]:
        library = self.owned(library)
        return self.show(library.delete(library.active_id))

    def clear(self, library: ChatLibrary | None) -> tuple[object, ...]:
        library = self.owned(library)
        return self.show(library.put(library.active.cleared()))

    def stop(self, request: gr.Request) -> None:
        self._runner.runs.stop(session_key(request))

    def send(self, text: str, library: ChatLibrary | None, thinking_mode: str, temperature: float, top_p: float,
             max_tokens: float | None, keep_reasoning: bool, system_prompt: str,
             request: gr.Request) -> Iterator[tuple[object, ...]]:
        settings = settings_from_form(thinking_mode, temperature, top_p, max_tokens)
        if not text.strip():
            gr.Warning("Type a message first.")
            return
        library = self.owned(library)
        chat = library.active
        chat = chat.with_conversation(Conversation(chat.conversation.turns, system_prompt.strip()).ask(text.strip()))
        yield from self._answer(library, chat, settings, keep_reasoning, request)

    def regenerate(self, library: ChatLibrary | None, thinking_mode: str, temperature: float, top_p: float,
                   max_tokens: float | None, keep_reasoning: bool, system_prompt: str,
                   request: gr.Request) -> Iterator[tuple[object, ...]]:
        settings = settings_from_form(thinking_mode, temperature, top_p, max_tokens)
        library = self.owned(library)
        chat = library.active.before_last_answer()
        if chat is None:
            gr.Warning("Nothing to regenerate yet: send a message first.")
            return
        chat = chat.with_conversation(Conversation(chat.conversation.turns, system_prompt.strip()))
        yield from self._answer(library, chat, settings, keep_reasoning, request)

    def _answer(self, library: ChatLibrary, chat: SavedChat, settings: GenerationSettings, keep_reasoning: bool,
                request: gr.Request) -> Iterator[tuple[object, ...]]:
        answer = AnswerRequest(chat, settings, LoopOptions(keep_reasoning=keep_reasoning))
        saved = render(transcript(chat))  # rendered once: only the live answer changes while it streams
        try:
            for update in self._runner.answer(session_key(request), answer):
                if update.phase == "started":  # the question is saved (a reload keeps it); Send turns into Stop
                    yield self.show(library.put(chat), busy=True, message="", chatbot=saved + render(running=True))
                elif update.phase == "streaming":
                    yield self.frame(saved + render(live=update.live, running=True))
                elif update.phase == "answered":
                    yield self.frame(render(transcript(update.chat)))
                else:
                    yield self.show(library.put(update.chat), message="")
        except SessionBusy as exc:
            gr.Warning(f"An answer is still streaming in this page: {exc}.")
