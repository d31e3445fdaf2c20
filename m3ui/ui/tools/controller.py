"""The Tools tab's handlers: the model calls tools and the page shows each call (arguments, status, duration,
result) while the tool loop runs them and hands the results back, until the final answer or the step limit.

Every handler returns its values keyed by component ({ui.chatbot: ...}): Gradio places them whatever the order
of the listener's outputs, and a component that is not among them is left as it was. The tool chat is kept by a
ToolChatKeeper (m3ui.ui.tools.keeping: the browser, or the server under accounts) as the Chat tab keeps its chats:
the question once asked, the answer so far while it streams, the answer once it ended, and a cleared chat.
Custom tools live for the page session only.
With "approve each call" the loop pauses on every call until the user clicks Approve or Deny (a separate request
that resolves the run).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import gradio as gr

from m3ui.chat_session import (
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
from m3ui.client import GenerationSettings
from m3ui.conversation import LoopOptions
from m3ui.conversation.library import SavedChat
from m3ui.tools import CustomToolError
from m3ui.ui.chat.controls import BUSY_WARNING, clean_text, session_key, settings_from_form
from m3ui.ui.chat.render import render
from m3ui.ui.tools.keeping import Kept, ToolChatKeeper
from m3ui.ui.tools.layout import MESSAGE_HINT, ToolsTabUI
from m3ui.ui.tools.schemas import schemas_json

BUSY_HINT = "An answer is running: Enter queues your message (Esc stops the answer)"
# A handler's values, keyed by component; or gr.skip(), Gradio's own "change nothing" (keyed by strings, hence Any).
Values = dict[Any, object]
# What a handler with nothing to do returns: every output stays exactly as it was (a streaming handler that
# yields nothing blanks them all).
UNCHANGED: Values = gr.skip()


def approval_prompt(call: CallView) -> str:
    name = call.name.replace("`", "'")  # the name comes from the model: keep it inside its code span
    return f"**Run `{name}`?** With the arguments shown in its call above."


def offered(selected: object) -> list[str]:
    """The ticked tools as the page (or an API client) sent them: a list of names; anything else ticks none."""
    return [name for name in selected if isinstance(name, str)] if isinstance(selected, list) else []


class ToolsController:
    def __init__(self, runner: ChatRunner, ui: ToolsTabUI, keeper: ToolChatKeeper) -> None:
        self._runner = runner
        self.ui = ui
        self.keeper = keeper

    def show(self, kept: Kept, busy: bool = False, message: object = None,
             chatbot: list[gr.ChatMessage] | None = None, awaiting: CallView | None = None) -> Values:
        """Values for ToolsTabUI.view: the chat as kept, the buttons for `busy`."""
        ui = self.ui
        return {ui.chat: kept.chat, ui.chatbot: render(transcript(kept.chat)) if chatbot is None else chatbot,
                ui.message: self._message(busy, message), ui.send: gr.update(visible=not busy),
                ui.stop: gr.update(visible=busy), ui.regenerate: gr.update(interactive=not busy),
                ui.clear: gr.update(interactive=not busy), **self._approval(awaiting), ui.saved: kept.saved}

    @staticmethod
    def _message(busy: bool, value: object) -> dict[str, object]:
        """While an answer runs the box stays open: Enter there queues the message (assets/js/composer.js)."""
        state: dict[str, Any] = {"placeholder": BUSY_HINT if busy else MESSAGE_HINT}
        return gr.update(**state) if value is None else gr.update(value=value, **state)

    def _approval(self, awaiting: CallView | None) -> Values:
        if awaiting is None:
            return {self.ui.approval: gr.update(visible=False)}
        return {self.ui.approval: gr.update(visible=True), self.ui.approval_text: approval_prompt(awaiting)}

    def frame(self, chatbot: list[gr.ChatMessage], awaiting: CallView | None) -> Values:
        return {self.ui.chatbot: chatbot, **self._approval(awaiting)}

    def load(self, saved: object, request: gr.Request) -> Values:
        """The page opened: the tool chat kept for this person, if any (from the browser: untrusted, anything
        unreadable starts a new chat)."""
        chat = self.keeper.restored(saved, request.username)
        return {self.ui.chat: chat, self.ui.chatbot: render(transcript(chat))} if chat is not None else UNCHANGED

    def clear(self, chat: SavedChat, request: gr.Request) -> Values:
        """The chat's own trash button stays clickable while an answer runs: clearing then would show Send in
        place of Stop with the answer still running, so it is refused."""
        if self._runner.runs.running(session_key(request)):
            gr.Warning("An answer is running: press Stop first, then Clear.")
            return UNCHANGED
        return self.show(self.keeper.cleared(chat, request.username))

    def stop(self, request: gr.Request) -> None:
        self._runner.runs.stop(session_key(request))

    def approve(self, request: gr.Request) -> dict[str, object]:
        self._runner.runs.decide(session_key(request), True)
        return gr.update(visible=False)

    def deny(self, request: gr.Request) -> dict[str, object]:
        self._runner.runs.decide(session_key(request), False)
        return gr.update(visible=False)

    def tools_changed(self, specs: tuple[str, ...], selected: list[str], choice: str) -> Values:
        """The tool_choice options and the schema view follow the selection (a forced tool no longer
        selected falls back to auto)."""
        names = [tool.name for tool in all_tools(specs)]
        options = tool_choice_options([name for name in names if name in selected])
        value = choice if choice in [value for _, value in options] else "auto"
        custom = [tool.name for tool in custom_tools(specs)]
        ui = self.ui
        return {ui.tool_picker: gr.update(choices=names, value=[n for n in names if n in selected]),
                ui.tool_choice: gr.update(choices=options, value=value), ui.schemas: schemas_json(selected, specs),
                ui.remove_tool: gr.update(choices=custom, value=None)}

    def add_tool(self, specs: tuple[str, ...], selected: list[str], choice: str, text: str) -> Values:
        try:
            specs, tool = add_custom(specs, text)
        except CustomToolError as exc:
            return {self.ui.custom_status: f"⚠ {exc}"}
        selected = [*selected, tool.name] if tool.name not in selected else selected
        return {self.ui.custom_specs: specs, **self.tools_changed(specs, selected, choice),
                self.ui.custom_status: f"✓ Added `{tool.name}`: it is now offered to the model."}

    def remove_tool(self, specs: tuple[str, ...], selected: list[str], choice: str, name: str) -> Values:
        specs = remove_custom(specs, name)
        return {self.ui.custom_specs: specs, **self.tools_changed(specs, selected, choice),
                self.ui.custom_status: f"Removed `{name}`."}

    def send(self, text: str, chat: SavedChat, specs: tuple[str, ...], selected: list[str], choice: str,
             thinking_mode: str, require_approval: bool, max_steps: float, tool_timeout: float,
             stall_seconds: float | None, request: gr.Request) -> Iterator[Values]:
        selected = offered(selected)
        form = self.settings(selected, choice, thinking_mode, max_steps, tool_timeout, stall_seconds)
        text = clean_text(text).strip()
        if form is None or not text:
            if form is not None:
                gr.Warning("Type a message first.")
            yield UNCHANGED
            return
        asked = chat.with_conversation(chat.conversation.ask(text))
        yield from self._answer(chat, AnswerRequest(asked, *form, selected_registry(selected, specs),
                                                    require_approval), request)

    def regenerate(self, chat: SavedChat, specs: tuple[str, ...], selected: list[str], choice: str,
                   thinking_mode: str, require_approval: bool, max_steps: float, tool_timeout: float,
                   stall_seconds: float | None, request: gr.Request) -> Iterator[Values]:
        """A new answer to the last question: its old answer, tool calls and results are dropped first."""
        selected = offered(selected)
        form = self.settings(selected, choice, thinking_mode, max_steps, tool_timeout, stall_seconds)
        question = chat.before_last_answer()
        if form is None or question is None:
            if form is not None:
                gr.Warning("Nothing to regenerate yet: send a message first.")
            yield UNCHANGED
            return
        yield from self._answer(chat, AnswerRequest(question, *form, selected_registry(selected, specs),
                                                    require_approval), request)

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

    def _answer(self, shown: SavedChat, answer: AnswerRequest, request: gr.Request) -> Iterator[Values]:
        """Run `answer` (its chat made from `shown`, the page's): the question is kept once the run started (a
        refused keep raises, which stops the run), the answer so far while it streams (at most once per
        m3ui.chat_session.runner.PARTIAL_SAVE_S: an app killed meanwhile keeps it), the answer once it ended."""
        user = request.username
        answer = replace(answer, user=user)  # their quota and usage (m3ui/accounts/meter.py)
        saved = render(transcript(answer.chat))  # rendered once: only the live answer changes while it streams
        try:
            for update in self._runner.answer(session_key(request), answer):
                if update.phase == "started":
                    kept = self.keeper.kept(shown, update.chat, user)
                    shown = kept.chat  # a branch has an id and a title of its own, which the answer keeps
                    yield self.show(kept, busy=True, message="", chatbot=saved + render(running=True))
                elif update.phase == "streaming":
                    frame = self.frame(saved + render(live=update.live, running=True), update.awaiting_approval)
                    if update.so_far is not None:
                        kept = self.keeper.kept(shown, _onto(update.so_far, shown), user, answer=True)
                        shown = kept.chat
                        frame |= {self.ui.chat: kept.chat, self.ui.saved: kept.saved}
                    yield frame
                elif update.phase == "answered":
                    yield self.frame(render(transcript(update.chat)), None)
                else:  # what was typed meanwhile is kept
                    yield self.show(self.keeper.kept(shown, _onto(update.chat, shown), user, answer=True))
        except SessionBusy:
            gr.Warning(BUSY_WARNING)
            yield UNCHANGED


def _onto(chat: SavedChat, kept: SavedChat) -> SavedChat:
    """The answer's `chat` under the id and title its question was kept with (a branch's, after a conflict)."""
    return chat if chat.id == kept.id else replace(chat, id=kept.id, title=kept.title)
