"""A listener whose progress is hidden tracks it on no component (m3ui.ui.gradio_contacts.progress_targets): the page
then never re-snapshots its outputs at every other event's status change. Listeners that show progress keep
their outputs as targets, and the served app has no hidden listener left with Gradio's default."""

from __future__ import annotations

import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import gradio as gr  # noqa: E402
import httpx  # noqa: E402

from m3ui.ui.gradio_contacts.progress_targets import untrack_hidden_progress  # noqa: E402
from tests.app_process import running_app  # noqa: E402


def test_hidden_progress_gets_no_targets_and_shown_progress_keeps_its_own():
    with gr.Blocks() as demo:
        box, chat = gr.Textbox(), gr.Chatbot()
        gr.Button("hidden").click(lambda text: text, box, box, show_progress="hidden")
        gr.Button("full").click(lambda text: text, box, box)
        gr.Button("on the chat").click(lambda text: text, box, box, show_progress="hidden", show_progress_on=chat)
    untrack_hidden_progress(demo)
    targets = [dependency["show_progress_on"] for dependency in demo.get_config_file()["dependencies"]]
    assert targets == [[], None, [chat._id]]


def test_the_served_app_tracks_no_hidden_progress(tmp_path):
    with running_app(tmp_path) as app:
        dependencies = httpx.get(f"{app.url}/config", trust_env=False, timeout=30).json()["dependencies"]
    hidden = [d for d in dependencies if d["backend_fn"] and d["show_progress"] == "hidden"]
    assert len(hidden) >= 20  # the chat's answers and library actions, the header's and panels' refreshes
    assert [d["api_name"] for d in hidden if d["show_progress_on"] != []] == []
    send = next(d for d in dependencies if d["api_name"] == "send")
    assert send["show_progress_on"] == []
