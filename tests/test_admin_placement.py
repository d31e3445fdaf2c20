"""The admin's Placement tab: advice from the Monitor's window, the relaunch refused with a reason until there is
a plan, its endpoints named and private like every admin handler (test_admin_access checks they refuse others)."""

from __future__ import annotations

import gradio as gr
import pytest

from m3ui.access import AccessPolicy
from m3ui.admin.console import AdminConsole
from m3ui.services import AppServices
from m3ui.ui.admin.guard import AdminGuard
from m3ui.ui.admin.placement import PlacementEvents, build_placement_panel
from m3ui.ui.admin.view import build_admin_app


@pytest.fixture
def services(tmp_path):
    app = AppServices.create(tmp_path / "data", AccessPolicy("127.0.0.1", None))
    yield app
    app.close()


def test_without_a_recording_engine_the_tab_says_why_and_refuses_the_relaunch(services):
    with gr.Blocks():
        events = PlacementEvents(build_placement_panel(), AdminConsole(services), AdminGuard(services.policy))
    advice, card = events.tick()
    assert "expert recorder is not recording" in advice and card == ""
    outcome, card = events.start()
    assert "No placement plan yet" in outcome and "m3a-error" in outcome and card == ""


def test_the_admin_app_has_the_placement_tab_and_its_private_endpoints(services):
    demo = build_admin_app(services)
    config = demo.get_config_file()
    names = {d.get("api_name"): d for d in config["dependencies"]}
    for name in ("admin_placement_tick", "admin_placement_relaunch"):
        assert name in names and names[name]["api_visibility"] == "private"
    labels = [c.get("props", {}).get("label") for c in config["components"]]
    assert "Placement" in labels
