"""The Chat tab's handlers: each turns component values into a call on the core objects and the result back into
component updates. A handler with nothing to do (an empty message, nothing to regenerate, an answer already
streaming) returns `unchanged()`: every component stays exactly as it was, and a toast says why. An answer
streams into a few components and `finish` then sets the whole view (see m3ui.ui.chat.following); a refused
answer's `finish` gives the page back its Send button (which the page's script turned into Stop) and its
question."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import replace

import gradio as gr

from m3ui.chat_session import AnswerRequest, ChatRunner, SessionBusy, chat_tools, transcript
from m3ui.chat_session.page_libraries import PageLibraries
from m3ui.client import GenerationSettings
from m3ui.client.early_request import EarlyRequest
from m3ui.conversation import Conversation, LoopOptions
from m3ui.conversation.library import CHAT_SETTINGS, ChatLibrary, ChatNote, SavedChat
from m3ui.legacy_chats import legacy_chats
from m3ui.live.feed import TICKET
from m3ui.ui.chat.controls import BUSY_WARNING, clean_text, download_of, session_key, settings_from_form, tools_switch
from m3ui.ui.chat.folding import edited_question
from m3ui.ui.chat.following import Following, answer_frame, live_frame, live_values
from m3ui.ui.chat.live_view import LivePage
from m3ui.ui.chat.render import message_times, render
from m3ui.ui.chat.server_library import ServerLibrary
from m3ui.ui.chat.view_slots import Values

log = logging.getLogger(__name__)

EMPTY_MESSAGE = "Type a message first."
FIRST_FRAME_WAIT_S = 0.5  # the longest an answer's first Gradio frame waits for its first text (see _answer)
LIST_LABEL = "Conversations (newest first)"
NOTHING_TO_REGENERATE = "Nothing to regenerate yet: send a message first."
NOTHING_TO_CONTINUE = "The last answer was not cut short: there is nothing to continue."


def unchanged() -> Values:
    return {}


def _failed(chat: SavedChat, exc: Exception) -> SavedChat:
    """The chat with a note that a bug ended the turn (logged with its traceback)."""
    log.error("chat answer failed", exc_info=exc)
    return chat.add_notes(ChatNote(len(chat.conversation.turns) - 1, "error", f"internal error: "
                                   f"{type(exc).__name__}. Your message is kept: press Regenerate to try again."))


def _with_system_prompt(chat: SavedChat, system_prompt: str) -> SavedChat:
    """The chat as it is sent: with the system prompt the form holds now."""
    return chat.with_conversation(Conversation(chat.conversation.turns, clean_text(system_prompt).strip()))


def _asked(library: ChatLibrary, text: str, system_prompt: str) -> SavedChat:
    """The active chat with the question `text` added, as it is sent."""
    chat = _with_system_prompt(library.active, system_prompt)
    return chat.with_conversation(chat.conversation.ask(text))


# The form's values in the order of the answer handlers' arguments (as the page sends them early, by name: an early
# request made without `tools` would not match its answer's and be cancelled)
FORM = ("thinking_mode", "temperature", "top_p", "max_tokens", "stall_seconds", "keep_reasoning", "system_prompt",
        "tools")


def _list_label(query: str, found: bool) -> str:
    """The chat list's heading: what a search found, or that it found nothing (an empty list alone says nothing)."""
    query = " ".join(query.split())
    if not query:
        return LIST_LABEL
    shown = query if len(query) <= 40 else query[:39] + "…"
    return f"Chats matching “{shown}”" if found else f"No chat matches “{shown}”: clear the search to see them all"


def _version_label(chat: SavedChat) -> str:
    """Which of the last question's answers is shown: "2/3"."""
    versions = chat.versions
    return "" if versions is None else f"**{versions.shown + 1}/{versions.count}**"


def _user_ordinal(chat: SavedChat, message_index: int) -> int:
    """Which question (0-based) a message shown at `message_index` belongs to: itself, or the one it answers."""
    shown = render(transcript(chat))[: message_index + 1]
    return sum(1 for message in shown if message.role == "user") - 1


class ChatController:
    """Handlers return Values keyed by slot name (m3ui.ui.chat.view_slots): `show` gives every slot of the view,
    live frames the chatbot and the saving slots only."""

    def __init__(self, runner: ChatRunner, server: ServerLibrary | None = None, live: LivePage | None = None) -> None:
        self._runner = runner
        self._server = server  # set: the library is kept on the server for the signed-in person, not the browser
        self._live = live  # set: an answer's frames go to its page's live channel when one is open
        self._pages = PageLibraries()  # what each page shows: a question's request can go out at the click

    def show(self, library: ChatLibrary, busy: bool = False, message: object = None,
             chatbot: object = None, controls: bool = True, form: bool = False) -> Values:
        """Values for the view. `controls=False` leaves the busy/idle buttons as they are (a background sync);
        `form=True` sets the settings form to the active chat's (a chat opened, the page loaded)."""
        return self._values(library, busy, message, chatbot, controls, form)[1]

    def _values(self, library: ChatLibrary, busy: bool, message: object, chatbot: object,
                controls: bool, form: bool = False, answer: bool = False
                ) -> tuple[ChatLibrary, Values]:
        """`answer`: the library's changes save an answer, as it streams or once it ended (see ServerLibrary.saved)."""
        writes, library = library.outbox()
        if self._server is not None:
            library, writes = self._server.saved(library, writes, answer), []
        self._pages.shown(library)
        chat = library.active
        choices = library.choices()
        idle = not busy
        has_turns = bool(chat.conversation.turns)
        # The times go with a full view only: an answer's frames carry the live slots alone (m3ui.ui.chat.following)
        timed = idle and not answer
        # A chat answered before chats had a tools switch was answered without tools
        kept = {"tools": False, **chat.settings} if chat.settings else {}
        items = transcript(chat) if chatbot is None or timed else ()
        values: Values = {
            "library": library,
            "outbox": writes if writes else gr.skip(),
            "chatbot": render(items) if chatbot is None else chatbot,
            "message_times": message_times(items) if timed else gr.skip(),  # the chat as saved, as shown then
            "chat_picker": gr.update(choices=choices, value=chat.id if any(c[1] == chat.id for c in choices)
                                     else None, interactive=idle, label=_list_label(library.query, bool(choices))),
            "title": chat.title,
            "system_prompt": chat.conversation.system_prompt,
            "message": gr.skip() if message is None else message,
            # Send and Stop are the page's (ui/chat/view.py ASK_JS turns it busy) and `finish`'s (idle again): a library
            # action done while an answer streams (a search, a sync) must not make the page look idle.
            "send": gr.skip(),
            "stop": gr.skip(),
            "export_md": gr.update(interactive=idle and has_turns),
            "export_json": gr.update(interactive=idle and has_turns),
            "undo": gr.update(visible=idle and library.undo is not None,
                              value=f"↶ Undo: {library.undo.label}" if library.undo else "↶ Undo"),
            "message_actions": gr.update(visible=False),
            # Continue only where the last answer was cut short (max tokens, a stop)
            "continue_answer": gr.update(visible=idle and chat.to_continue() is not None),
            # ‹ n/N › when Regenerate kept earlier answers to the last question
            "versions": gr.update(visible=idle and chat.versions is not None),
            "version_label": _version_label(chat),
            **{name: gr.update(interactive=idle) for name in ("regenerate", "clear", "new_chat", "rename", "delete")},
            # A chat keeps the settings it was answered with; one never answered leaves the form as it is.
            **{name: kept[name] if form and name in kept else gr.skip() for name in CHAT_SETTINGS},
        }
        if not controls:
            for name in ("regenerate", "continue_answer", "clear", "new_chat", "rename", "delete", "message_actions",
                         "versions"):
                values[name] = gr.skip()
        return library, values

    @staticmethod
    def owned(library: ChatLibrary | None) -> ChatLibrary:
        """The page's library; a page that never loaded one (an API client) gets its own fresh one."""
        return library if library is not None else ChatLibrary.fresh()

    # --- the library: load, sync with other pages, pick, rename, delete, clear, undo, search, export

    def load(self, browser: object, legacy: object = None, page: object = "",
             request: gr.Request | None = None) -> Values:
        """The page opened: its chats come from the browser's storage (records, untrusted), plus, until the
        browser is migrated, the chats it saved the old way (written as records by this first show). `page`:
        its live ticket (m3ui.live), so that its questions can be sent early; it is this session's from now on
        (another session's ticket is not taken)."""
        page = page if isinstance(page, str) and TICKET.fullmatch(page) else ""
        if page and self._live is not None and request is not None and not self._live.bind(page, request):
            page = ""
        if self._server is not None:
            return self.show(replace(self._server.load(), page=page), form=True)
        browser = browser if isinstance(browser, dict) else {}
        unsaved = [] if browser.get("migrated") is True else legacy_chats(legacy)
        return self.show(replace(ChatLibrary.from_records(browser.get("records"), unsaved=unsaved), page=page),
                         form=True)

    def sync(self, library: ChatLibrary | None, browser: object) -> Values:
        """Another page changed the browser's chats (or one of ours was saved as a copy): show them all."""
        if self._server is not None:  # the server's chats, not the browser's
            records = self._server.records(self._server.user())
            return self.show(self.owned(library).synced(records), controls=False)
        if not isinstance(browser, dict):
            return unchanged()
        moved = browser.get("moved") if isinstance(browser.get("moved"), dict) else {}
        return self.show(self.owned(library).synced(browser.get("records"), moved), controls=False)

    def new_chat(self, library: ChatLibrary | None, system_prompt: str) -> Values:
        return self.show(self.owned(library).start_new(clean_text(system_prompt).strip()))

    def switch(self, library: ChatLibrary | None, chat_id: object) -> Values:
        """`chat_id` comes unprocessed (Gradio's own check answers a stale or forged id with its list of choices)."""
        library = self.owned(library)
        if not chat_id:
            return unchanged()
        if not (isinstance(chat_id, str) and any(chat.id == chat_id for chat in library.chats)):
            raise gr.Error("That chat is not in this page's list (another tab may have deleted it): pick one from "
                           "the list.", print_exception=False)
        return self.show(library.switch(chat_id), form=True)

    def search(self, library: ChatLibrary | None, query: str) -> Values:
        library = replace(self.owned(library), query=clean_text(query))
        return self.show(library)

    def rename(self, library: ChatLibrary | None, title: str) -> Values:
        library = self.owned(library)
        return self.show(library.rename(library.active_id, clean_text(title)))

    def delete(self, library: ChatLibrary | None) -> Values:
        library = self.owned(library)
        if not library.active.conversation.turns:
            gr.Info("This chat is empty: there is nothing to delete.")
            return unchanged()
        return self.show(library.delete(library.active_id), form=True)

    def clear(self, library: ChatLibrary | None) -> Values:
        library = self.owned(library)
        if not library.active.conversation.turns:
            return unchanged()
        return self.show(library.put_undoable(library.active.cleared(), f"cleared “{library.active.title}”"))

    def undo(self, library: ChatLibrary | None) -> Values:
        library = self.owned(library)
        return self.show(library.undone()) if library.undo is not None else unchanged()

    def export(self, library: ChatLibrary | None, kind: str) -> dict[str, str]:
        """The active chat as a document for the page to download (nothing is written on the server)."""
        return download_of(self.owned(library).active, kind)

    # --- one message: select, edit and resend, retry from it, delete it

    def select(self, library: ChatLibrary | None, event: gr.SelectData) -> Values:
        """A click on a message offers Retry and Delete for its question (selected: that question's turn index)."""
        chat = self.owned(library).active
        ordinal = _user_ordinal(chat, event.index if isinstance(event.index, int) else -1)
        turn = chat.user_turn_index(ordinal)
        if turn is None:
            return {"selected": None, "message_actions": gr.update(visible=False)}
        later = chat.conversation.last_user_index() > turn
        replaced = "its answer and every later question and answer" if later else "its answer"
        return {"selected": turn, "message_actions": gr.update(visible=True),
                "selected_label": f"**Question {ordinal + 1}** selected. Retry answers it again and replaces "
                                  f"{replaced} (Undo brings them back)."}

    def previous_version(self, library: ChatLibrary | None) -> Values:
        return self._version(library, -1)

    def next_version(self, library: ChatLibrary | None) -> Values:
        return self._version(library, 1)

    def _version(self, library: ChatLibrary | None, step: int) -> Values:
        """Another answer to the last question shown (‹ ›); the one shown before is kept with the others."""
        library = self.owned(library)
        versions = library.active.versions
        if versions is None:
            return unchanged()
        return self.show(library.put(library.active.showing_version(versions.shown + step)))

    def delete_exchange(self, library: ChatLibrary | None, turn: int | None) -> Values:
        library = self.owned(library)
        if turn is None or not library.active.is_question(turn):
            return unchanged()
        return self.show(library.put_undoable(library.active.without_exchange(turn), "removed a question"))

    def stop(self, request: gr.Request) -> None:
        self._runner.runs.stop(session_key(request))

    # --- answers (streaming): the values of LIVE_SLOTS and a Following for `finish`

    def send(self, text: str, library: ChatLibrary | None, thinking_mode: str, temperature: float, top_p: float,
             max_tokens: float | None, stall_seconds: float | None, keep_reasoning: bool, system_prompt: str,
             tools: bool, live_ticket: str, request: gr.Request) -> Iterator[Values]:
        settings = settings_from_form(thinking_mode, temperature, top_p, max_tokens, stall_seconds=stall_seconds)
        tools = tools_switch(tools)
        text = clean_text(text).strip()
        if not text:
            gr.Warning(EMPTY_MESSAGE)
            yield live_frame(gr.skip())
            return
        library = self.owned(library)
        early = self._runner.early.take(live_ticket, request.username, text)
        yield from self._answer(library, _asked(library, text, system_prompt), settings, keep_reasoning, tools,
                                live_ticket, request, question=text, early=early)

    def send_early(self, page: str, form: dict[str, object], user: str | None) -> bool:
        """The page asks (m3ui.live.early_ask): send its question's engine request now, from the chat it was last
        shown; its answer (`send`) takes it if it asks for the very same request. False: nothing was sent (the
        page is unknown, the form is not what the page sends, the answer would not start)."""
        library = self._pages.get(page)
        text = form.get("text")
        question = clean_text(text).strip() if isinstance(text, str) else ""
        if library is None or not question:
            return False
        try:
            values = [form[name] for name in FORM]
            settings = settings_from_form(*values[:4], stall_seconds=values[4])  # type: ignore[arg-type]  # the form's values
        except (KeyError, gr.Error):
            return False
        keep_reasoning, system_prompt, tools = values[5], values[6], values[7]
        if not isinstance(keep_reasoning, bool) or not isinstance(system_prompt, str) or not isinstance(tools, bool):
            return False
        chat = _asked(library, question, system_prompt)
        return self._runner.send_early(page, question, self._request(chat, settings, keep_reasoning, tools, user))

    @staticmethod
    def _request(chat: SavedChat, settings: GenerationSettings, keep_reasoning: bool, tools: bool, user: str | None,
                 early: EarlyRequest | None = None) -> AnswerRequest:
        """With tools on, the Tools tab's loop runs the built-in tools (m3ui.ui.tools.controller: the same runner,
        tool loop and rendering) and the chat shows their calls, with no approval (see chat_tools)."""
        return AnswerRequest(chat, settings, LoopOptions(keep_reasoning=keep_reasoning), chat_tools(tools), user=user,
                             early=early)

    def regenerate(self, library: ChatLibrary | None, thinking_mode: str, temperature: float, top_p: float,
                   max_tokens: float | None, stall_seconds: float | None, keep_reasoning: bool, system_prompt: str,
                   tools: bool, live_ticket: str, request: gr.Request) -> Iterator[Values]:
        settings = settings_from_form(thinking_mode, temperature, top_p, max_tokens, stall_seconds=stall_seconds)
        library = self.owned(library)
        # the answer it replaces is kept: ‹ › shows it again
        yield from self._answer_again(library, library.active.regenerating, NOTHING_TO_REGENERATE, settings,
                                      keep_reasoning, system_prompt, tools, live_ticket, request)

    def continue_answer(self, library: ChatLibrary | None, thinking_mode: str, temperature: float, top_p: float,
                        max_tokens: float | None, stall_seconds: float | None, keep_reasoning: bool,
                        system_prompt: str, tools: bool, live_ticket: str, request: gr.Request) -> Iterator[Values]:
        """The last answer, cut short, goes on from where it ended: what comes is appended to it (the engine
        continues the final assistant message: m3ui.client.request)."""
        settings = settings_from_form(thinking_mode, temperature, top_p, max_tokens, stall_seconds=stall_seconds)
        library = self.owned(library)
        yield from self._answer_again(library, library.active.to_continue, NOTHING_TO_CONTINUE, settings,
                                      keep_reasoning, system_prompt, tools, live_ticket, request)

    def _answer_again(self, library: ChatLibrary, chat_to_answer: Callable[[], SavedChat | None], nothing: str,
                      settings: GenerationSettings, keep_reasoning: bool, system_prompt: str, tools: object,
                      live_ticket: str, request: gr.Request) -> Iterator[Values]:
        """Regenerate and Continue: the chat to answer again (taken once the form is checked), or a warning that
        there is nothing to."""
        switch = tools_switch(tools)
        chat = chat_to_answer()
        if chat is None:
            gr.Warning(nothing)
            yield live_frame(gr.skip())
            return
        yield from self._answer(library, _with_system_prompt(chat, system_prompt), settings, keep_reasoning,
                                switch, live_ticket, request)

    def edit(self, library: ChatLibrary | None, thinking_mode: str, temperature: float, top_p: float,
             max_tokens: float | None, stall_seconds: float | None, keep_reasoning: bool, system_prompt: str,
             tools: bool, live_ticket: str, event: gr.EditData, request: gr.Request) -> Iterator[Values]:
        """An edited question is sent again from there: the turns after it are replaced (Undo brings them back)."""
        settings = settings_from_form(thinking_mode, temperature, top_p, max_tokens, stall_seconds=stall_seconds)
        tools = tools_switch(tools)
        library = self.owned(library)
        chat = library.active
        turn = chat.user_turn_index(_user_ordinal(chat, event.index if isinstance(event.index, int) else -1))
        text = clean_text(event.value).strip()
        if turn is not None and text:  # the editor held the folded view of any attached documents
            text = edited_question(chat.conversation.turns[turn].content, text)  # type: ignore[union-attr]  # user_turn_index gave a user turn
        if turn is None or not text:
            gr.Warning(EMPTY_MESSAGE if turn is not None else "That message can no longer be edited.")
            yield from self._settled(library, chat)  # the chatbot shows the edit already: put the saved text back
            return
        library = library.put_undoable(chat, "edited a question (the old answers)")
        edited = _with_system_prompt(chat.edited(turn, text), system_prompt)
        yield from self._answer(library, edited, settings, keep_reasoning, tools, live_ticket, request)

    def retry_from(self, library: ChatLibrary | None, turn: int | None, thinking_mode: str, temperature: float,
                   top_p: float, max_tokens: float | None, stall_seconds: float | None, keep_reasoning: bool,
                   system_prompt: str, tools: bool, live_ticket: str, request: gr.Request) -> Iterator[Values]:
        """Answer a chosen question again: its answer and every later turn are replaced (Undo brings them back)."""
        settings = settings_from_form(thinking_mode, temperature, top_p, max_tokens, stall_seconds=stall_seconds)
        tools = tools_switch(tools)
        library = self.owned(library)
        chat = library.active
        if turn is None or not chat.is_question(turn):
            yield live_frame(gr.skip())
            return
        library = library.put_undoable(chat, "retried a question (the old answers)")
        retried = _with_system_prompt(chat.retried(turn), system_prompt)
        yield from self._answer(library, retried, settings, keep_reasoning, tools, live_ticket, request)

    def _answer(self, library: ChatLibrary, chat: SavedChat, settings: GenerationSettings, keep_reasoning: bool,
                tools: bool, live_ticket: str, request: gr.Request, question: str | None = None,
                early: EarlyRequest | None = None) -> Iterator[Values]:
        """The question saved (a reload keeps it), frames of the chatbot alone, and the answer saved. A refused
        `question` (the message box's text) goes back into the box. While the page's live channel is open, the
        frames between the first and the last go there instead (m3ui.live)."""
        chat = chat.with_settings({**{name: getattr(settings, name) for name in FORM[:5]},
                                   "keep_reasoning": keep_reasoning, "tools": tools})  # it opens with them next time
        answer = self._request(chat, settings, keep_reasoning, tools, request.username, early)
        try:
            updates = self._runner.answer(session_key(request), answer)
            opening = next(updates)
        except SessionBusy:
            gr.Warning(BUSY_WARNING)
            yield live_frame(gr.skip(), Following(library, message=question))
            return
        except Exception as exc:  # a bug in one turn must not leave the page stuck in "busy"
            yield from self._settled(library, _failed(chat, exc))
            return
        if opening.done:  # the engine is not ready: the question is saved with a note
            yield from self._settled(library, opening.chat)
            return
        saved = render(transcript(chat))  # rendered once: only the live answer changes while it streams
        # The page's channel gets the question too (the last message saved): the page shows the answer as soon as
        # its first token comes, without waiting for Gradio's frames to bring the question.
        asked = len(saved) - 1
        channel = self._live.answer(live_ticket, request) if self._live is not None else None
        waiting = render(running=True)
        sent = channel is not None and channel.show(asked, saved[asked:] + waiting)
        library, values = self._values(library.put(chat), busy=True, message=None,
                                       chatbot=gr.skip() if sent else saved + waiting, controls=True)
        following = Following(library)
        # While Gradio handles a frame this generator waits (10-20 ms for the first, which saves the question and
        # lists the chat): when the channel shows the question, that frame waits for the answer's first text.
        first: Values | None = live_values(values, following)
        due = time.monotonic() + FIRST_FRAME_WAIT_S if sent else 0.0
        try:
            for update in updates:
                if update.phase == "streaming":
                    live = render(live=update.live, running=True)
                    shown = channel is not None and channel.show(asked, saved[asked:] + live)
                    if update.so_far is not None and first is None:  # saved as it grows: a killed app keeps it
                        following.library, values = self._values(following.library.put(update.so_far), True, None,
                                                                 gr.skip() if shown else saved + live, False,
                                                                 answer=True)
                        yield live_values(values)
                        continue
                    if first is not None and (not shown or time.monotonic() >= due):
                        yield first
                        first = None
                    elif first is not None and any(not step.empty for step in update.live):
                        due = 0.0  # the text is on its way: the frame goes with the next update
                    if not shown:
                        yield answer_frame(saved + live)
                    continue
                if first is not None:
                    yield first
                    first = None
                whole = render(transcript(update.chat))  # answered (its hit rate looked up next), or done
                sent = channel is not None and channel.show(0, whole)
                if update.done:  # the last frame goes both ways: whichever comes last, the page shows it
                    yield self._ended(following, update.chat, whole)
                elif not sent:
                    yield answer_frame(whole)
        except Exception as exc:  # a bug in one turn must not leave the page stuck in "busy"
            if first is not None:
                yield first
            yield self._ended(following, _failed(chat, exc))
        finally:
            if channel is not None:
                channel.close()
            updates.close()  # also when the page left mid-answer: the run stops and the session is freed

    def _settled(self, library: ChatLibrary, outcome: SavedChat) -> Iterator[Values]:
        """No answer streams: `outcome` is saved at once."""
        yield self._ended(Following(library), outcome)

    def _ended(self, following: Following, outcome: SavedChat, chatbot: object = None) -> Values:
        """The live slots once the answer ended: saved (also for an API client, which never runs `finish`). The
        page turns idle in `finish`, together with the rest of the view."""
        following.library, values = self._values(following.library.put(outcome), False, None, chatbot, True,
                                                 answer=True)
        following.outcome = outcome
        return live_values(values, following)

    def finish(self, following: Following | None, request: gr.Request) -> Values:
        """The rest of the view once the answer ended and was saved; and no Following any more. After a refused
        answer the page gets Send back (unless another answer streams in it) and its refused question."""
        ended = following is not None and following.outcome is not None
        values = self.show(following.library, chatbot=gr.skip()) if following is not None and ended else unchanged()
        if not self._runner.runs.running(session_key(request)):  # (the stream showed the chat)
            values["send"], values["stop"] = gr.update(visible=True), gr.update(visible=False)
        if ended:
            return {**values, "following": None}
        if following is None or following.message is None:
            return values  # a running one's Following is left be
        return {**values, "message": following.message, "following": None}  # the refused question, handed over once
