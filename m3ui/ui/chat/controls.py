"""Controls and helpers both chat tabs use: the thinking-mode picker, settings checked before sending,
the session key of a browser page, and the runner a tab starts answers with."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import gradio as gr

from m3ui.accounts.meter import AnswerMeter
from m3ui.chat_session import AnswerHitRate, ChatRunner
from m3ui.chat_session.worker_lost import answer_failure
from m3ui.client import THINKING_MODES, EndpointConfig, GenerationSettings, SettingsError, validate_thinking_mode
from m3ui.conversation.library import SavedChat, export_documents
from m3ui.engine_link import EngineLink
from m3ui.services import AppServices

# Both chat boxes follow the window's height (up to 620 px), so the composer below them, and the Tools tab's
# Approve/Deny bar, stay on screen on a laptop; phone.css sets the phone's own height.
CHAT_BOX_HEIGHT = "clamp(320px, calc(100dvh - 420px), 620px)"
# Said once when a page asks for a second answer while one streams (the runner's reason would repeat it).
BUSY_WARNING = "An answer is still streaming in this page: stop it first (■ Stop or Esc)."
THINKING_MODE_INFO = ("Adaptive: the model decides whether to think. Enabled: it always thinks first. "
                      "Disabled: it answers directly.")


def thinking_mode_radio() -> gr.Radio:
    return gr.Radio([(mode.capitalize(), mode) for mode in _ordered_modes()], value=GenerationSettings().thinking_mode,
                    label="Thinking mode", info=THINKING_MODE_INFO, elem_classes=["m3-thinking-mode"])


def _ordered_modes() -> tuple[str, ...]:
    default = GenerationSettings().thinking_mode
    return (default, *(mode for mode in THINKING_MODES if mode != default))


# The answer listeners of both chat tabs: no concurrency limit, whatever the app's queue default (Gradio's is 1 per
# listener); inputs handed over as the page sent them, checked by the handlers (settings_from_form): Gradio's
# preprocess ran each input in a worker thread of its own, one after another, 10-30 ms before an answer could start.
STREAMING_LISTENER: dict[str, Any] = {"concurrency_limit": None, "show_progress": "hidden", "preprocess": False}


def clean_text(text: object) -> str:
    """Text from the page as something that can always be stored, sent and shown (lone surrogates replaced)."""
    return str(text or "").encode("utf-8", "replace").decode("utf-8")


def settings_from_form(thinking_mode: str, temperature: float | None = None, top_p: float | None = None,
                       max_tokens: float | None = None, *, stall_seconds: float | None = None) -> GenerationSettings:
    """The settings, or gr.Error with what to fix (raised before anything is sent or changed)."""
    defaults = GenerationSettings()
    try:
        return GenerationSettings(
            thinking_mode=validate_thinking_mode(thinking_mode),
            temperature=defaults.temperature if temperature is None else float(temperature),
            top_p=defaults.top_p if top_p is None else float(top_p),
            max_tokens=defaults.max_tokens if max_tokens is None else _whole(max_tokens),
            stall_seconds=defaults.stall_seconds if stall_seconds is None else float(stall_seconds),
        )
    except (SettingsError, TypeError, ValueError) as exc:  # the page's values as sent (the API's too): not numbers
        raise gr.Error(f"Fix the settings before sending: {exc}", title="Invalid setting") from exc


def tools_switch(value: object) -> bool:
    """A chat's tools switch as the page (or an API client) sent it; gr.Error before anything is sent when it is
    not a plain true or false."""
    if not isinstance(value, bool):
        raise gr.Error(f"Fix the settings before sending: the tools switch must be true or false; got {value!r}",
                       title="Invalid setting")
    return value


def _whole(value: float) -> int:
    if float(value) != int(value):
        raise SettingsError(f"max_tokens must be a whole number; got {value}")
    return int(value)


def download_of(chat: SavedChat, kind: str) -> dict[str, str]:
    """`chat` as a document of `kind` ("md" or "json") for the page to download (nothing is written on the
    server), or gr.Error that says why not."""
    if not chat.conversation.turns:
        raise gr.Error("This chat is empty: there is nothing to export.")
    try:
        return {**export_documents(chat)[kind], "kind": kind}
    except ValueError as exc:
        raise gr.Error(str(exc), title="Export refused") from exc


def session_key(request: gr.Request | None) -> str:
    """One key per open page: its Stop and Approve clicks find the answer it is streaming."""
    return (request.session_hash if request is not None else None) or "no-session"


def chat_runner(services: AppServices) -> ChatRunner:
    """A tab's runner: answers go to the app's engine, one at a time per page and tab."""
    return link_runner(services.link, services.answer_gpu_hit_rate, services.meter)


def link_runner(link: EngineLink, hit_rate: AnswerHitRate | None = None,
                meter: AnswerMeter | None = None) -> ChatRunner:
    """A runner on the engine `link` follows; an answer the engine's death broke off says what the engine's
    diagnosis says (on a fleet: that its worker stopped, and how many healthy ones are left)."""
    return ChatRunner(lambda: chat_endpoint(link), lambda: link.status().label, hit_rate,
                      lambda: answer_failure(link), meter)


def chat_endpoint(link: EngineLink) -> EndpointConfig | None:
    """Where answers go (None while the engine is not ready). An engine launched without a reasoning parser
    sends its thinking inside the content; in thinking mode "enabled" without even an opening tag."""
    endpoint, settings = link.endpoint(), link.settings
    if endpoint is None or settings is None:  # attached: unknown, an opening tag still gives it away
        return endpoint
    return replace(endpoint, reasoning_in_content=not settings.reasoning_parser)
