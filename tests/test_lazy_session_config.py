"""A Gradio session builds a component's configuration only when it needs it
(m3ui.ui.gradio_contacts.lazy_session_config), and what Gradio reads of the whole configuration (its deep-link route) is
the same as Gradio's own eager build."""

from __future__ import annotations

import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import gradio as gr  # noqa: E402
import gradio.state_holder as state_holder  # noqa: E402

from m3ui.ui.gradio_contacts.lazy_session_config import LazySessionState, lazy_session_config  # noqa: E402


def small_app() -> gr.Blocks:
    with gr.Blocks() as demo:
        box = gr.Textbox("hello", label="Box")
        gr.Chatbot([{"role": "user", "content": "hi"}])
        gr.Button("Go").click(lambda text: text.upper(), box, box)
    return demo


def by_id(components: object) -> dict[int, dict]:
    return {config["id"]: config for config in components}  # type: ignore[attr-defined, index]


def test_a_session_builds_no_configuration_until_it_is_read_and_then_with_the_values_set():
    demo = small_app()
    session = LazySessionState(demo)
    assert session.config_values == {}
    box = next(b for b in demo.blocks.values() if isinstance(b, gr.Textbox))
    session._update_value_in_config(box._id, "typed")
    session[box._id] = gr.Textbox("x", label="Renamed", render=False)  # what a gr.update(label=...) does
    session._update_config(box._id)
    assert session.config_values == {}
    shown = by_id(session.components)[box._id]["props"]
    assert shown["value"] == "typed" and shown["label"] == "Renamed"


def test_what_events_set_reads_back_as_gradios_own():
    demo = small_app()
    eager, lazy = LazySessionState.__bases__[0](demo), LazySessionState(demo)
    box = next(b for b in demo.blocks.values() if isinstance(b, gr.Textbox))
    chat = next(b for b in demo.blocks.values() if isinstance(b, gr.Chatbot))
    for session in (eager, lazy):
        session[box._id] = gr.Textbox("x", label="Renamed", interactive=False, render=False)
        session._update_config(box._id)
        session._update_value_in_config(box._id, "after")
        session._update_value_in_config(chat._id, [{"role": "user", "content": "bye"}])
    assert by_id(lazy.components) == by_id(eager.components)
    assert lazy[box._id].label == "Renamed"


def test_the_whole_configuration_read_at_once_is_gradios_own():
    demo = small_app()
    eager = by_id(LazySessionState.__bases__[0](demo).components)  # Gradio's SessionState
    assert by_id(LazySessionState(demo).components) == eager


def test_the_state_holder_creates_lazy_sessions_once_installed():
    lazy_session_config()
    demo = small_app()
    holder = state_holder.StateHolder()
    holder.set_blocks(demo)
    assert isinstance(holder["a-session"], LazySessionState)
