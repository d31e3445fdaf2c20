"""The Chat tab's attachments: the #m3-attach picker (also drag-and-drop and paste, assets/js/attach.js), the
chips (#m3-attachments), the context meter (#m3-context-meter), the choice offered over the context, and the
prefill progress's figures. The files are read on the server (m3ui.documents) from where Gradio stored them;
the page only forwards them, and its idea of a file's size or type is never trusted.

Attached documents travel inside the user's message (m3ui.documents.attachment.message_with), so they stay
with the chat wherever it is kept (the server for accounts, the browser's storage otherwise) and in its
exports; the chat shows them folded (m3ui.documents.folding)."""

from __future__ import annotations

import contextlib
import html
import json
import os
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import gradio as gr

from m3ui.conversation import Conversation
from m3ui.conversation.library import ChatLibrary
from m3ui.conversation.turns import AssistantTurn, ToolTurn, UserTurn
from m3ui.documents.attachment import Attachment, message_with
from m3ui.documents.budget import Budget, context_length
from m3ui.documents.engine_count import EngineCounter
from m3ui.documents.limits import DEFAULT_LIMITS, human_size
from m3ui.documents.prefill import PrefillRate, expected_seconds, measured_rate, simulated_rate
from m3ui.documents.reader import read_uploads
from m3ui.documents.token_count import TokenCounter
from m3ui.services import AppServices
from m3ui.ui.chat.controls import clean_text

PROGRESS_FROM_S = 1.0  # a prefill expected to take longer gets the progress bar
APPLY_JS = "(command, ...state) => [window.m3uiAttach.order(), ...state]"  # assets/js/attach.js
PREFILL_JS = "(figures) => { window.m3uiAttach.prefill(figures); }"  # assets/js/attach.js
PICKER = ('<label class="m3-attach-button" title="Attach files (or drop them on the chat, or paste them)">'
          '+ Attach files<input id="m3-attach" type="file" multiple></label>'
          f'<span class="m3-attach-limits">up to {DEFAULT_LIMITS.max_files} files, '
          f'{human_size(DEFAULT_LIMITS.max_file_bytes)} each; text, code, PDF, .zip</span>')


def _turn_text(turn: object) -> str:
    if isinstance(turn, UserTurn):
        return turn.content
    if isinstance(turn, AssistantTurn):
        return turn.content + "".join(call.arguments_json for call in turn.tool_calls)
    return turn.result.content if isinstance(turn, ToolTurn) else ""


class DocumentContext:
    """What the attachments need from the app: the model's tokenizer and context, and the prefill rate."""

    def __init__(self, services: AppServices) -> None:
        self._services = services

    def _model_path(self) -> str | None:
        settings = self._services.link.settings
        return settings.model_path if settings is not None else None

    @property
    def counter(self) -> TokenCounter:
        """The model's tokenizer.json, else the engine while it is ready (counted there), else estimates."""
        endpoint = self._services.link.endpoint()
        engine = (endpoint.base_url.removesuffix("/v1"), endpoint.model, endpoint.api_key) if endpoint else None
        return _counter(self._model_path(), engine)

    @property
    def limit(self) -> int:
        return _context(self._model_path())

    def prefill_rate(self, prompt_tokens: int) -> PrefillRate | None:
        engine, settings = self._services.link.engine, self._services.link.settings
        if engine is not None and engine.kind == "sim" and settings is not None:
            return simulated_rate(settings.tp_size, settings.kt_gpu_prefill_token_threshold, prompt_tokens)
        history = self._services.monitor.sampler.history()
        return measured_rate([s.rates.prompt_tokens_per_s for s in history.engine if s.rates])


@lru_cache(maxsize=4)  # one per model and engine: each keeps its exact counts (a chat's turns, counted once)
def _counter(model_path: str | None, engine: tuple[str, str, str] | None) -> TokenCounter:
    return TokenCounter.for_model(model_path, EngineCounter(*engine) if engine else None)


@lru_cache(maxsize=4)
def _context(model_path: str | None) -> int:
    return context_length(model_path)


def budget_for(ctx: DocumentContext, library: ChatLibrary | None, attached: list[Attachment], typed: str,
               system_prompt: str, max_tokens: float | None) -> Budget:
    turns = library.active.conversation.turns if library is not None else ()
    counter = ctx.counter  # once: which counter depends on the engine's state, asked for each time

    def tokens(text: str) -> int:
        return counter.count(text).tokens if text else 0

    return Budget(limit=ctx.limit, system=tokens(clean_text(system_prompt)),
                  history=tuple(tokens(_turn_text(t)) for t in turns),
                  attachments=tuple(a.tokens.tokens for a in attached if not a.refused),
                  typed=tokens(typed), max_tokens=int(max_tokens or 0))


def chips_html(attached: list[Attachment], browser_kept: bool) -> str:
    chips = []
    for index, a in enumerate(attached):
        info = a.chip()
        parts = [f'<span class="m3-chip-name">{html.escape(a.name)}</span>',
                 f'<span class="m3-chip-size">{info["size"]}</span>' if a.size else ""]
        if a.refused:
            parts.append(f'<span class="m3-chip-error" role="alert">{html.escape(a.error)}</span>')
        else:
            parts.append(f'<span class="m3-chip-tokens">{html.escape(str(info["tokens_label"]))}</span>')
            if a.note:
                parts.append(f'<span class="m3-chip-note">{html.escape(a.note)}</span>')
        parts.append(f'<button class="m3-chip-remove" data-remove="{index}" aria-label="Remove '
                     f'{html.escape(a.name)}">×</button>')
        kind = " m3-chip-refused" if a.refused else ""
        # Kept in this browser's IndexedDB: attach.js adds the chip's note when the browser has no room for it
        keep = f' data-keep-chars="{len(a.text)}"' if browser_kept and not a.refused else ""
        chips.append(f'<div class="m3-chip{kind}" data-index="{index}"{keep}>{"".join(p for p in parts if p)}</div>')
    return "".join(chips)


def meter_html(budget: Budget) -> str:
    share = min(1.0, budget.used / budget.limit) if budget.limit else 1.0
    state = "over" if budget.over else "high" if share > 0.8 else "ok"
    parts: dict[str, int] = budget.meter()["parts"]  # type: ignore[assignment]  # meter() is JSON for the page; "parts" is this
    title = " · ".join(f"{name.replace('_', ' ')} {value:,}" for name, value in parts.items())
    return (f'<div class="m3-meter m3-meter-{state}" data-used="{budget.used}" data-limit="{budget.limit}" '
            f'title="{html.escape(title)}"><div class="m3-meter-bar" style="width:{share * 100:.1f}%"></div>'
            f'<span class="m3-meter-text">context {budget.used:,} / {budget.limit:,} tokens'
            + (f" — {budget.over:,} over" if budget.over else "") + "</span></div>")


@dataclass
class AttachmentsView:
    attached: gr.State
    files: gr.File
    command: gr.Textbox
    apply: gr.Button
    chips: gr.HTML
    meter: gr.HTML
    prefill: gr.JSON
    choice: gr.Column
    choice_text: gr.Markdown
    drop: gr.Button
    trim: gr.Button
    cancel: gr.Button
    over: gr.State

    @classmethod
    def build(cls) -> AttachmentsView:
        attached = gr.State([])
        with gr.Column(visible=False, elem_id="m3-context-choice", elem_classes=["m3-context-choice"]) as choice:
            choice_text = gr.Markdown("")
            with gr.Row():
                drop = gr.Button("Drop the oldest turns", size="sm", elem_id="m3-context-drop")
                trim = gr.Button("Trim the file", size="sm", elem_id="m3-context-trim")
                cancel = gr.Button("Cancel", size="sm", elem_id="m3-context-cancel")
        with gr.Row(elem_classes=["m3-attach-row"]):
            gr.HTML(PICKER, elem_classes=["m3-attach-picker"])
            chips = gr.HTML("", elem_id="m3-attachments")
            meter = gr.HTML("", elem_id="m3-context-meter")
        # Where the page hands its files to Gradio's upload (attach.js); hidden, never shown.
        files = gr.File(file_count="multiple", type="filepath", elem_id="m3-attach-files",
                        elem_classes=["m3-attach-carrier"], show_label=False)
        command = gr.Textbox(visible=False)  # attach.js's order, handed over by APPLY_JS at the click on `apply`
        apply = gr.Button("apply", visible="hidden", elem_id="m3-attach-apply")
        prefill = gr.JSON(None, visible="hidden", elem_id="m3-prefill")
        return cls(attached, files, command, apply, chips, meter, prefill, choice, choice_text, drop, trim, cancel,
                   gr.State(None))


class AttachmentsController:
    def __init__(self, ctx: DocumentContext, browser_kept: bool) -> None:
        self.ctx = ctx
        self.browser_kept = browser_kept  # no accounts: the chats live in the browser's storage

    def _shown(self, attached: list[Attachment], library: ChatLibrary | None, system_prompt: str,
               max_tokens: float | None) -> tuple[object, ...]:
        budget = budget_for(self.ctx, library, attached, "", system_prompt, max_tokens)
        return attached, chips_html(attached, self.browser_kept), meter_html(budget)

    def upload(self, paths: list[str] | None, attached: list[Attachment] | None, library: ChatLibrary | None,
               system_prompt: str, max_tokens: float | None) -> tuple[object, ...]:
        attached = list(attached or [])
        names = [(p, os.path.basename(p)) for p in (paths or [])]
        attached += read_uploads(names, self.ctx.counter, already=len(attached))
        for path, _ in names:  # read: the text is in this page's state, the stored upload is not served again
            with contextlib.suppress(OSError):
                os.unlink(path)
        return (*self._shown(attached, library, system_prompt, max_tokens), None)

    def command_in(self, command: str, attached: list[Attachment] | None, library: ChatLibrary | None,
                   system_prompt: str, max_tokens: float | None) -> tuple[object, ...]:
        """attach.js's requests: {"remove": index}, {"refused": [{"name", "why"}]} (files it did not upload, so
        that their chips say why) or {"refresh": 1} (the chat changed: the meter is counted again)."""
        attached = list(attached or [])
        try:
            order = json.loads(command or "{}")
        except ValueError:
            order = {}
        batch = order.get("batch") if isinstance(order, dict) else None
        orders = [o for o in (batch if isinstance(batch, list) else [order]) if isinstance(o, dict)]
        removed = {o["remove"] for o in orders if isinstance(o.get("remove"), int)}
        for index in sorted((i for i in removed if 0 <= i < len(attached)), reverse=True):  # indexes as shown
            del attached[index]
        for o in orders:
            given = o.get("refused")
            refused: list[Any] = given if isinstance(given, list) else []
            for item in [r for r in refused if isinstance(r, dict)][:DEFAULT_LIMITS.max_files]:
                attached.append(Attachment(name=str(item.get("name", "file"))[:200], size=0, kind="refused",
                                           error=str(item.get("why", "not uploaded"))[:300]))
        return self._shown(attached, library, system_prompt, max_tokens)

    def refresh(self, attached: list[Attachment] | None, library: ChatLibrary | None, system_prompt: str,
                max_tokens: float | None) -> object:
        return self._shown(list(attached or []), library, system_prompt, max_tokens)[2]

    def prepare(self, text: str, attached: list[Attachment] | None, library: ChatLibrary | None,
                system_prompt: str, max_tokens: float | None) -> tuple[object, ...]:
        """Before a question goes out: over the context, it is held back with a choice (and the typed text goes
        back into the box); otherwise the attachments join it, and the chips empty.
        Outputs: asked, attached, chips, meter, prefill, choice, choice_text, message, over, send, stop (over
        the context, the page gets its Send button back)."""
        attached = list(attached or [])
        typed = clean_text(text).strip()
        budget = budget_for(self.ctx, library, attached, typed, system_prompt, max_tokens)
        skip = gr.skip()
        if budget.over:
            return (skip, skip, skip, meter_html(budget), skip, gr.update(visible=True),
                    self._choice_text(budget, attached), text, True, gr.update(visible=True),
                    gr.update(visible=False))
        if not attached:
            prompt = budget.used - budget.max_tokens
            return (skip, skip, skip, skip, self._prefill(prompt), gr.update(visible=False), skip, skip, False,
                    skip, skip)
        merged = message_with(typed, [a for a in attached if not a.refused])
        kept = [a for a in attached if a.refused]  # refused chips stay until removed: nothing vanishes unread
        after = budget_for(self.ctx, library, kept, merged, system_prompt, max_tokens)  # the question now sent
        return (merged, kept, chips_html(kept, self.browser_kept), meter_html(after),
                self._prefill(budget.used - budget.max_tokens), gr.update(visible=False), skip, skip, False, skip, skip)

    def _prefill(self, prompt_tokens: int) -> dict[str, object] | None:
        rate = self.ctx.prefill_rate(prompt_tokens)
        seconds = expected_seconds(prompt_tokens, rate)
        if seconds is None or seconds < PROGRESS_FROM_S:
            return None
        return {"tokens": prompt_tokens, "seconds": round(seconds, 2), "source": rate.source if rate else ""}

    @staticmethod
    def _choice_text(budget: Budget, attached: list[Attachment]) -> str:
        lines = [f"⚠ **Over the context by {budget.over:,} tokens** ({budget.used:,} of {budget.limit:,}, with "
                 f"{budget.max_tokens:,} kept for the answer). Nothing was sent and nothing is cut unless you choose:"]
        drop = budget.turns_to_drop()
        lines.append(f"- *Drop the oldest turns*: removes the first {drop} turn(s) of this chat" if drop
                     else "- *Drop the oldest turns*: not enough (or no earlier turns)")
        trim = budget.trim_largest_to()
        files = [a for a in attached if not a.refused]
        lines.append(f"- *Trim the file*: keeps the first {trim[1]:,} tokens of {files[trim[0]].name}" if trim
                     else "- *Trim the file*: not enough (or no file attached)")
        lines.append("- *Cancel*: change nothing (lower Max tokens, or remove a file)")
        return "\n".join(lines)

    def gate(self, over: bool | None) -> None:
        """Stops the answer over the context. The choice shown above the message box is the notice (a warning
        with its ways out, not a failure): the error that stops the chain is never shown as a toast."""
        if over:
            raise gr.Error("Over the model's context", visible=False, print_exception=False)

    def drop_oldest(self, text: str, attached: list[Attachment] | None, library: ChatLibrary | None,
                    system_prompt: str, max_tokens: float | None) -> tuple[object, ...]:
        """Outputs: library, meter, choice, choice_text."""
        attached = list(attached or [])
        budget = budget_for(self.ctx, library, attached, clean_text(text).strip(), system_prompt, max_tokens)
        drop = budget.turns_to_drop()
        if library is None or not drop:
            gr.Warning("Dropping earlier turns is not enough here: trim the file or cancel.")
            return gr.skip(), gr.skip(), gr.skip(), gr.skip()
        chat = library.active
        turns = chat.conversation.turns[drop:]
        while turns and not isinstance(turns[0], UserTurn):  # a chat starts with a question
            turns = turns[1:]
        library = library.put(chat.with_conversation(Conversation(turns, chat.conversation.system_prompt), ()))
        gr.Info(f"Dropped the oldest {len(chat.conversation.turns) - len(turns)} turn(s). Send again.")
        return library, self.refresh(attached, library, system_prompt, max_tokens), gr.update(visible=False), ""

    def trim_file(self, text: str, attached: list[Attachment] | None, library: ChatLibrary | None,
                  system_prompt: str, max_tokens: float | None) -> tuple[object, ...]:
        """Outputs: attached, chips, meter, choice, choice_text."""
        attached = list(attached or [])
        files = [i for i, a in enumerate(attached) if not a.refused]
        budget = budget_for(self.ctx, library, attached, clean_text(text).strip(), system_prompt, max_tokens)
        trim = budget.trim_largest_to()
        if trim is None:
            gr.Warning("Trimming the file is not enough here: drop earlier turns or cancel.")
            return gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()
        index = files[trim[0]]
        old = attached[index]
        kept = self.ctx.counter.head(old.text, trim[1])
        attached[index] = replace(old, text=kept, tokens=self.ctx.counter.count(kept),
                                  note=f"trimmed to its first {trim[1]:,} of {old.tokens.tokens:,} tokens")
        gr.Info(f"Trimmed {old.name} to fit. Send again.")
        return (*self._shown(attached, library, system_prompt, max_tokens), gr.update(visible=False), "")


def wire_attachments(view: AttachmentsView, services: AppServices, browser_kept: bool, library: gr.State,
                     system_prompt: gr.Textbox, max_tokens: gr.Number, message: gr.Textbox) -> AttachmentsController:
    control = AttachmentsController(DocumentContext(services), browser_kept)
    quick: dict[str, Any] = {"show_progress": "hidden", "concurrency_id": "chat-attachments"}
    state = [view.attached, library, system_prompt, max_tokens]
    view.files.upload(control.upload, [view.files, *state], [view.attached, view.chips, view.meter, view.files],
                      **quick)
    view.apply.click(control.command_in, [view.command, *state], [view.attached, view.chips, view.meter], js=APPLY_JS,
                     trigger_mode="always_last", **quick)
    # The chat itself changing (an answer, another chat picked) is told by attach.js as a "refresh" command: a
    # State's own change event would hash the whole library on every call.
    gr.on([system_prompt.change, max_tokens.change], control.refresh, state, view.meter, **quick)
    asked = [message, *state]
    view.drop.click(control.drop_oldest, asked, [library, view.meter, view.choice, view.choice_text], **quick)
    view.trim.click(control.trim_file, asked, [view.attached, view.chips, view.meter, view.choice, view.choice_text],
                    **quick)
    view.cancel.click(lambda: (gr.update(visible=False), ""), None, [view.choice, view.choice_text], **quick)
    view.prefill.change(None, [view.prefill], None, js=PREFILL_JS)
    return control


def before_send(view: AttachmentsView, control: AttachmentsController, asking: gr.events.Dependency,
                asked: gr.Textbox, library: gr.State, system_prompt: gr.Textbox, max_tokens: gr.Number,
                message: gr.Textbox, idle: list[gr.Button]) -> gr.events.Dependency:
    """The step between the page's ask and the answer: attachments joined, the context checked. Over it, the
    page gets its Send button back and the answer never starts (`gate` fails, so `.success` does not run)."""
    prepared = asking.then(control.prepare, [asked, view.attached, library, system_prompt, max_tokens],
                           [asked, view.attached, view.chips, view.meter, view.prefill, view.choice,
                            view.choice_text, message, view.over, *idle], show_progress="hidden", queue=False)
    # Both off the queue: each queued step cost the answer's first token a join and a dispatch (+20 ms TTFT)
    return prepared.then(control.gate, [view.over], None, show_progress="hidden", queue=False)
