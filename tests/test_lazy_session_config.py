"""A Gradio session builds a component's configuration only when it needs it
(m3ui.ui.gradio_costs.lazy_session_config), and what Gradio reads of the whole configuration (its deep-link route) is
the same as Gradio's own eager build."""

from __future__ import annotations

import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import gradio as gr  # noqa: E402
import gradio.state_holder as state_holder  # noqa: E402

from m3ui.ui.gradio_costs.lazy_session_config import LazySessionState, lazy_session_config  # noqa: E402


def small_app() -> gr.Blocks:
    with gr.Blocks() as demo:
        box = gr.Textbox("hello", label="Box")
        gr.Chatbot([{"role": "user", "content": "hi"}])
        gr.Button("Go").click(lambda text: text.upper(), box, box)
    return demo


def by_id(components: object) -> dict[int, dict]:
    return {config["id"]: config for config in components}  # type: ignore[attr-defined, index]


def test_a_new_session_builds_no_configuration_and_fills_in_what_it_touches():
    demo = small_app()
    session = LazySessionState(demo)
    assert session.config_values == {}
    box = next(b for b in demo.blocks.values() if isinstance(b, gr.Textbox))
    session._update_value_in_config(box._id, "typed")
    assert session.config_values[box._id]["props"]["value"] == "typed"


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
