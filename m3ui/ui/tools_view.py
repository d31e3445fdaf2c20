"""The Tools tab: the model calls tools and the page shows each call (arguments, status, duration, result)
while the tool loop runs them and hands the results back, until the final answer or the step limit.

The conversation is kept in the browser's storage (one tool chat per browser, with the name of the person it is
for when there are logins; assets/js/tools.js) and comes back on reload; it exports like a Chat tab chat. Custom
tools live for the page session only. With "approve each call" the loop pauses on every call until the user
clicks Approve or Deny (a separate request that resolves the run).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import gradio as gr

from m3ui.chat_session import (
    EXAMPLE_CUSTOM_TOOL,
    AnswerRequest,
    CallView,
    ChatRunner,
    SessionBusy,
    ToolSetupError,
    add_custom,
    all_tools,
    custom_tools,
    remove_custom,
    selected_registry,
    tool_choice_from,
    tool_choice_options,
    transcript,
)
from m3ui.client import MAX_STALL_SECONDS, MIN_STALL_SECONDS, GenerationSettings
from m3ui.conversation import LoopOptions
from m3ui.conversation.library import SavedChat, chat_from_record, chat_record, new_chat
from m3ui.services import AppServices
from m3ui.tools import CustomToolError, builtin_tools
from m3ui.ui.chat.controls import (
    BUSY_WARNING,
    CHAT_BOX_HEIGHT,
    STREAMING_LISTENER,
    chat_runner,
    clean_text,
    download_of,
    session_key,
    settings_from_form,
    thinking_mode_radio,
)
from m3ui.ui.chat.render import render
from m3ui.ui.chat.view import DOWNLOAD_JS

DEFAULT_OPTIONS = LoopOptions()
DEFAULT_SETTINGS = GenerationSettings()
EXAMPLES = [
    "What's the weather in Paris?",
    "Compare the weather in Tokyo and Oslo for 3 days.",
    "Use the calculator: (17 * 23 + 4) / 3",
    "Search the docs for thinking modes.",
    "What's the weather in Lisbon, and what is 2**10?",
]
MESSAGE_HINT = "Ask something a tool can answer…  (Enter sends)"
BUSY_HINT = "An answer is running: Enter queues your message (Esc stops the answer)"
PLACEHOLDER = ("**Tool calling demo**\n\nAsk something a tool can answer (weather, arithmetic, unit conversion, "
               "time, docs search). Each call shows its arguments, status and result; the results go back to "
               "the model, which then answers.")
# The page script keeps the tool chat in the browser's storage (assets/js/tools.js).
READ_SAVED_JS = "(saved) => [window.m3uiTools.read()]"
WRITE_SAVED_JS = "(saved) => { window.m3uiTools.write(saved); }"


@dataclass
class ToolsTabUI:
    chat: gr.State
    custom_specs: gr.State
    chatbot: gr.Chatbot
    message: gr.Textbox
    send: gr.Button
    stop: gr.Button
    regenerate: gr.Button
    clear: gr.Button
    approval: gr.Group
    approval_text: gr.Markdown
    approve: gr.Button
    deny: gr.Button
    saved: gr.JSON
    export_md: gr.Button
    export_json: gr.Button
    download: gr.JSON
    tool_picker: gr.CheckboxGroup
    tool_choice: gr.Dropdown
    thinking_mode: gr.Radio
    require_approval: gr.Checkbox
    max_steps: gr.Slider
    tool_timeout: gr.Slider
    stall_seconds: gr.Number
    schemas: gr.Code
    custom_json: gr.Code
    add_tool: gr.Button
    remove_tool: gr.Dropdown
    custom_status: gr.Markdown

    @property
    def view(self) -> list[gr.blocks.Block]:
        """See ToolsController.show."""
        return [self.chat, self.chatbot, self.message, self.send, self.stop, self.regenerate, self.clear,
                self.approval, self.approval_text, self.saved]

    @property
    def settings(self) -> list[gr.components.Component]:
        """What a send or a regenerate reads besides the chat: see ToolsController.settings."""
        return [self.custom_specs, self.tool_picker, self.tool_choice, self.thinking_mode, self.require_approval,
                self.max_steps, self.tool_timeout, self.stall_seconds]

    @property
    def tools(self) -> list[gr.components.Component]:
        """What the tool choice and the schema view derive from: see ToolsController.tools_changed."""
        return [self.tool_picker, self.tool_choice, self.schemas, self.remove_tool]


def build_tools_tab(services: AppServices, page: gr.Blocks) -> ToolsTabUI:
    ui = _layout()
    _wire(ui, ToolsController(chat_runner(services)), page)
    return ui


def _layout() -> ToolsTabUI:
    names = [tool.name for tool in builtin_tools()]
    chat = gr.State(new_chat())
    custom_specs = gr.State(())
    with gr.Row(equal_height=False, elem_classes=["m3-tools"]):
        with gr.Column(scale=3, min_width=420):
            chatbot = gr.Chatbot(height=CHAT_BOX_HEIGHT, show_label=False, elem_id="m3-tools-chatbot",
                                 placeholder=PLACEHOLDER, feedback_options=None, buttons=["copy_all"],
                                 group_consecutive_messages=False)
            # One short bar right under the chat (the call's arguments are in the chat, shown once).
            with (gr.Group(visible=False, elem_id="m3-approval", elem_classes=["m3-approval"]) as approval,
                  gr.Row(equal_height=True)):
                approval_text = gr.Markdown(elem_classes=["m3-approval-text"])
                approve = gr.Button("✓ Approve", variant="primary", size="sm", min_width=100, scale=0,
                                    elem_id="m3-approve")
                deny = gr.Button("✗ Deny", variant="stop", size="sm", min_width=100, scale=0, elem_id="m3-deny")
            with gr.Row(equal_height=True, elem_classes=["m3-composer"]):
                message = gr.Textbox(placeholder=MESSAGE_HINT, show_label=False, lines=1, max_lines=8, scale=8,
                                     elem_id="m3-tools-message")
                send = gr.Button("Send", variant="primary", scale=1, min_width=80, elem_id="m3-tools-send")
                stop = gr.Button("■ Stop", variant="stop", scale=1, min_width=80, visible=False,
                                 elem_id="m3-tools-stop")
            with gr.Row():
                regenerate = gr.Button("↻ Regenerate", size="sm", elem_id="m3-tools-regenerate")
                clear = gr.Button("Clear", size="sm", elem_id="m3-tools-clear")
                export_md = gr.Button("⬇ Markdown", size="sm", elem_id="m3-tools-export-md")
                export_json = gr.Button("⬇ JSON", size="sm", elem_id="m3-tools-export-json")
            saved = gr.JSON(None, visible=False)  # the chat as the browser keeps it (tools.js writes it)
            download = gr.JSON(None, visible=False)  # an export for chat.js to hand to the browser
            gr.Examples(EXAMPLES, [message], label="Try")
        with gr.Column(scale=2, min_width=280, elem_classes=["m3-settings"]):
            tool_picker = gr.CheckboxGroup(names, value=names, label="Tools offered to the model",
                                           elem_id="m3-tool-picker")
            tool_choice = gr.Dropdown(tool_choice_options(names), value="auto", label="tool_choice",
                                      info="auto: the model decides · none: no calls · required / force: must call "
                                           "(first request only)", elem_id="m3-tool-choice")
            thinking_mode = thinking_mode_radio()
            require_approval = gr.Checkbox(False, label="Approve each call before it runs",
                                           elem_id="m3-require-approval")
            with gr.Row():
                max_steps = gr.Slider(1, 10, value=DEFAULT_OPTIONS.max_steps, step=1, label="Step limit",
                                      info="requests to the model per question")
                tool_timeout = gr.Slider(1, 60, value=DEFAULT_OPTIONS.tool_timeout_s, step=1,
                                         label="Tool timeout (s)")
            # No minimum/maximum here: Gradio would refuse a bad value with an error over the chat; the handler
            # says what to fix instead and leaves the page as it was.
            stall_seconds = gr.Number(DEFAULT_SETTINGS.stall_seconds, label="Stall limit (s)",
                                      info=f"an answer is given up after this long with nothing from the engine "
                                           f"({MIN_STALL_SECONDS:g}–{MAX_STALL_SECONDS:g}; raise it for long "
                                           f"prompts: they are silent until the first token)",
                                      elem_id="m3-tools-stall")
            with gr.Accordion("Tool schemas sent to the model", open=False):
                schemas = gr.Code(_schemas_json(names, ()), language="json", interactive=False, show_label=False)
            with gr.Accordion("Custom tool (JSON schema + result template)", open=False):
                custom_json = gr.Code(EXAMPLE_CUSTOM_TOOL, language="json", interactive=True, show_label=False,
                                      elem_id="m3-custom-json")
                with gr.Row():
                    add_tool = gr.Button("Add / replace tool", size="sm", elem_id="m3-add-tool")
                    remove_tool = gr.Dropdown([], label="Remove a custom tool", scale=1, min_width=120)
                custom_status = gr.Markdown("`$name` in the template is replaced by the argument's value.")
    return ToolsTabUI(chat, custom_specs, chatbot, message, send, stop, regenerate, clear, approval, approval_text,
                      approve, deny, saved, export_md, export_json, download, tool_picker, tool_choice, thinking_mode,
                      require_approval, max_steps, tool_timeout, stall_seconds, schemas, custom_json, add_tool,
                      remove_tool, custom_status)


def _wire(ui: ToolsTabUI, tools: ToolsController, page: gr.Blocks) -> None:
    gr.on([ui.message.submit, ui.send.click], tools.send, [ui.message, ui.chat, *ui.settings], ui.view,
          **STREAMING_LISTENER)
    ui.regenerate.click(tools.regenerate, [ui.chat, *ui.settings], ui.view, **STREAMING_LISTENER)
    ui.stop.click(tools.stop, None, None, queue=False)
    ui.approve.click(tools.approve, None, ui.approval, queue=False)
    ui.deny.click(tools.deny, None, ui.approval, queue=False)
    # Queued (unlike the other quick handlers): a refused clear says why in a toast, which only queued events show.
    gr.on([ui.clear.click, ui.chatbot.clear], tools.clear, ui.chat, ui.view, show_progress="hidden")
    ui.tool_picker.change(tools.tools_changed, [ui.custom_specs, ui.tool_picker, ui.tool_choice], ui.tools,
                          queue=False)
    ui.add_tool.click(tools.add_tool, [ui.custom_specs, ui.tool_picker, ui.tool_choice, ui.custom_json],
                      [ui.custom_specs, *ui.tools, ui.custom_status], queue=False)
    ui.remove_tool.input(tools.remove_tool, [ui.custom_specs, ui.tool_picker, ui.tool_choice, ui.remove_tool],
                         [ui.custom_specs, *ui.tools, ui.custom_status], queue=False)
    for button, kind in ((ui.export_md, "md"), (ui.export_json, "json")):
        button.click(lambda chat, kind=kind: download_of(chat, kind), [ui.chat], ui.download, show_progress="hidden"
                     ).success(None, [ui.download], None, js=DOWNLOAD_JS)
    ui.saved.change(None, [ui.saved], None, js=WRITE_SAVED_JS)
    # the saved tool chat comes back when the page (re)loads
    page.load(tools.load, [ui.saved], [ui.chat, ui.chatbot], js=READ_SAVED_JS, queue=False, show_progress="hidden")


def _schemas_json(selected: list[str], specs: tuple[str, ...]) -> str:
    """Exactly what a send would offer the model."""
    return json.dumps(selected_registry(selected, specs).openai_tools(), indent=2, ensure_ascii=False)


def _approval_prompt(call: CallView) -> str:
    name = call.name.replace("`", "'")  # the name comes from the model: keep it inside its code span
    return f"**Run `{name}`?** With the arguments shown in its call above."


# What a handler with nothing to do returns for ToolsTabUI.view: every component stays exactly as it was (a
# streaming handler that yields nothing blanks them all).
UNCHANGED: tuple[object, ...] = tuple(gr.skip() for _ in range(10))


def saved_record(chat: SavedChat, user: str | None) -> dict[str, object]:
    """The tool chat as its browser keeps it: with whose it is, so that another person signing in on the same
    browser does not get it back."""
    return {"user": user or "", "chat": chat_record(chat)}


def restored_chat(saved: object, user: str | None) -> SavedChat | None:
    if not isinstance(saved, dict) or saved.get("user") != (user or ""):
        return None
    return chat_from_record(saved.get("chat"))


def offered(selected: object) -> list[str]:
    """The ticked tools as the page (or an API client) sent them: a list of names; anything else ticks none."""
    return [name for name in selected if isinstance(name, str)] if isinstance(selected, list) else []


class ToolsController:
    def __init__(self, runner: ChatRunner) -> None:
        self._runner = runner

    def show(self, chat: SavedChat, busy: bool = False, message: object = None,
             chatbot: list[gr.ChatMessage] | None = None, awaiting: CallView | None = None,
             user: str | None = None) -> tuple[object, ...]:
        """Values for ToolsTabUI.view; `chat` is saved in the browser for `user` (None: no logins)."""
        return (chat, render(transcript(chat)) if chatbot is None else chatbot, self._message(busy, message),
                gr.update(visible=not busy), gr.update(visible=busy), gr.update(interactive=not busy),
                gr.update(interactive=not busy), *self._approval(awaiting), saved_record(chat, user))

    @staticmethod
    def _message(busy: bool, value: object) -> dict[str, object]:
        """While an answer runs the box stays open: Enter there queues the message (assets/js/composer.js)."""
        state: dict[str, Any] = {"placeholder": BUSY_HINT if busy else MESSAGE_HINT}
        return gr.update(**state) if value is None else gr.update(value=value, **state)

    @staticmethod
    def _approval(awaiting: CallView | None) -> tuple[object, object]:
        if awaiting is None:
            return gr.update(visible=False), gr.skip()
        return gr.update(visible=True), _approval_prompt(awaiting)

    def frame(self, chatbot: list[gr.ChatMessage], awaiting: CallView | None) -> tuple[object, ...]:
        return (gr.skip(), chatbot, *(gr.skip() for _ in range(5)), *self._approval(awaiting), gr.skip())

    def load(self, saved: object, request: gr.Request) -> tuple[object, object]:
        """The page opened: the tool chat its browser kept for this person, if any (untrusted: anything
        unreadable starts a new chat)."""
        chat = restored_chat(saved, request.username)
        return (chat, render(transcript(chat))) if chat is not None else (gr.skip(), gr.skip())

    def clear(self, chat: SavedChat, request: gr.Request) -> tuple[object, ...]:
        """The chat's own trash button stays clickable while an answer runs: clearing then would show Send in
        place of Stop with the answer still running, so it is refused."""
        if self._runner.runs.running(session_key(request)):
            gr.Warning("An answer is running: press Stop first, then Clear.")
            return UNCHANGED
        return self.show(chat.cleared(), user=request.username)

    def stop(self, request: gr.Request) -> None:
        self._runner.runs.stop(session_key(request))

    def approve(self, request: gr.Request) -> dict[str, object]:
        self._runner.runs.decide(session_key(request), True)
        return gr.update(visible=False)

    def deny(self, request: gr.Request) -> dict[str, object]:
        self._runner.runs.decide(session_key(request), False)
        return gr.update(visible=False)

    def tools_changed(self, specs: tuple[str, ...], selected: list[str], choice: str) -> tuple[object, ...]:
        """The tool_choice options and the schema view follow the selection (a forced tool no longer
        selected falls back to auto)."""
        names = [tool.name for tool in all_tools(specs)]
        options = tool_choice_options([name for name in names if name in selected])
        value = choice if choice in [value for _, value in options] else "auto"
        custom = [tool.name for tool in custom_tools(specs)]
        return (gr.update(choices=names, value=[n for n in names if n in selected]),
                gr.update(choices=options, value=value), _schemas_json(selected, specs),
                gr.update(choices=custom, value=None))

    def add_tool(self, specs: tuple[str, ...], selected: list[str], choice: str, text: str) -> tuple[object, ...]:
        try:
            specs, tool = add_custom(specs, text)
        except CustomToolError as exc:
            return (gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip(), f"⚠ {exc}")
        selected = [*selected, tool.name] if tool.name not in selected else selected
        return (specs, *self.tools_changed(specs, selected, choice),
                f"✓ Added `{tool.name}`: it is now offered to the model.")

    def remove_tool(self, specs: tuple[str, ...], selected: list[str], choice: str, name: str) -> tuple[object, ...]:
        specs = remove_custom(specs, name)
        return (specs, *self.tools_changed(specs, selected, choice), f"Removed `{name}`.")

    def send(self, text: str, chat: SavedChat, specs: tuple[str, ...], selected: list[str], choice: str,
             thinking_mode: str, require_approval: bool, max_steps: float, tool_timeout: float,
             stall_seconds: float | None, request: gr.Request) -> Iterator[tuple[object, ...]]:
        selected = offered(selected)
        form = self.settings(selected, choice, thinking_mode, max_steps, tool_timeout, stall_seconds)
        text = clean_text(text).strip()
        if form is None or not text:
            if form is not None:
                gr.Warning("Type a message first.")
            yield UNCHANGED
            return
        chat = chat.with_conversation(chat.conversation.ask(text))
        yield from self._answer(AnswerRequest(chat, *form, selected_registry(selected, specs), require_approval),
                                request)

    def regenerate(self, chat: SavedChat, specs: tuple[str, ...], selected: list[str], choice: str,
                   thinking_mode: str, require_approval: bool, max_steps: float, tool_timeout: float,
                   stall_seconds: float | None, request: gr.Request) -> Iterator[tuple[object, ...]]:
        """A new answer to the last question: its old answer, tool calls and results are dropped first."""
        selected = offered(selected)
        form = self.settings(selected, choice, thinking_mode, max_steps, tool_timeout, stall_seconds)
        question = chat.before_last_answer()
        if form is None or question is None:
            if form is not None:
                gr.Warning("Nothing to regenerate yet: send a message first.")
            yield UNCHANGED
            return
        yield from self._answer(AnswerRequest(question, *form, selected_registry(selected, specs), require_approval),
                                request)

    @staticmethod
    def settings(selected: list[str], choice: str, thinking_mode: str, max_steps: float, tool_timeout: float,
                 stall_seconds: float | None) -> tuple[GenerationSettings, LoopOptions] | None:
        """The form's settings, or None after a warning that says what to fix (a raised gr.Error would also
        cover the chat with an error badge; nothing is sent or changed either way)."""
        try:
            settings = settings_from_form(thinking_mode, stall_seconds=stall_seconds)
            return settings, LoopOptions(tool_choice_from(str(choice), selected), int(max_steps), float(tool_timeout))
        except gr.Error as exc:
            gr.Warning(exc.message, title=exc.title)
        except (ToolSetupError, TypeError, ValueError) as exc:
            gr.Warning(f"Fix the tool settings before sending: {exc}", title="Invalid tool setting")
        return None

    def _answer(self, answer: AnswerRequest, request: gr.Request) -> Iterator[tuple[object, ...]]:
        answer = replace(answer, user=request.username)  # their quota and usage (m3ui/accounts/meter.py)
        chat = answer.chat
        saved = render(transcript(chat))  # rendered once: only the live answer changes while it streams
        try:
            for update in self._runner.answer(session_key(request), answer):
                if update.phase == "started":
                    yield self.show(chat, busy=True, message="", chatbot=saved + render(running=True),
                                    user=request.username)
                elif update.phase == "streaming":
                    yield self.frame(saved + render(live=update.live, running=True), update.awaiting_approval)
                elif update.phase == "answered":
                    yield self.frame(render(transcript(update.chat)), None)
                else:
                    yield self.show(update.chat, user=request.username)  # what was typed meanwhile is kept
        except SessionBusy:
            gr.Warning(BUSY_WARNING)
            yield UNCHANGED
