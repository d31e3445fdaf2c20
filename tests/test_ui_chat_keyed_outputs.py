"""Issue 28: the Chat tab's handlers hand Gradio values keyed by component, so an event's outputs listed in another
order still put every value into its own component, and a value for a component the event does not output fails
loudly instead of landing in a neighbour."""

from __future__ import annotations

import asyncio
import inspect

import gradio as gr
import pytest

from m3ui.access import AccessPolicy
from m3ui.conversation import Conversation
from m3ui.conversation.library import chat_record, new_chat
from m3ui.services import AppServices
from m3ui.ui.app_view import build_main_app
from m3ui.ui.chat.controller import ChatController


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    services = AppServices.create(tmp_path_factory.mktemp("data"), AccessPolicy.from_env("127.0.0.1", None))
    try:
        yield build_main_app(services)
    finally:
        services.close()


def chat_events(demo: gr.Blocks) -> list:
    """The events whose handler is one of ChatController's."""
    return [fn for fn in demo.fns.values() if fn.fn is not None
            and isinstance(getattr(inspect.unwrap(fn.fn), "__self__", None), ChatController)]


def test_a_page_load_with_its_outputs_listed_backwards_still_fills_each_component(demo):
    load = next(fn for fn in chat_events(demo) if inspect.unwrap(fn.fn).__name__ == "load")
    chat = new_chat().with_conversation(Conversation(system_prompt="Keyed prompt").ask("Keyed question"))
    chat = chat.with_settings({"temperature": 0.35})
    load.outputs = list(reversed(load.outputs))  # a list reordered: the positions of every component move
    try:
        result = load.fn({"records": [chat_record(chat)]}, None, "")
        shown = asyncio.run(demo.postprocess_data(load, result, None))
    finally:
        load.outputs = list(reversed(load.outputs))
    by_id = {block.elem_id: value for block, value in zip(load.outputs[::-1], shown, strict=True)}
    assert by_id["m3-chat-title"] == "Keyed question"
    assert by_id["m3-system-prompt"] == "Keyed prompt"
    assert by_id["m3-temperature"] == 0.35
    assert [message["content"][0]["text"] for message in by_id["m3-chatbot"]] == ["Keyed question"]


def test_every_chat_handler_with_several_outputs_returns_them_keyed(demo):
    events = [fn for fn in chat_events(demo) if len(fn.outputs) > 1]
    assert len(events) >= 15
    positional = [inspect.unwrap(fn.fn).__name__ for fn in events if not hasattr(fn.fn, "__wrapped__")]
    assert not positional, f"positional outputs: {positional}"


def test_a_value_for_a_component_the_event_does_not_output_names_the_slot():
    from m3ui.ui.chat.view_slots import Slots  # (here: the other tests also run on the positional code they catch)

    with gr.Blocks():
        title, message = gr.Textbox(), gr.Textbox()
    keyed = Slots({"title": title, "message": message}).keyed(lambda: {"message": "hi"}, ["title"])
    assert keyed["outputs"] == [title]
    with pytest.raises(KeyError, match="message"):
        keyed["fn"]()
    assert Slots({"title": title}).keyed(dict, ["title"])["fn"]() == gr.skip()  # nothing set: all left as they are
