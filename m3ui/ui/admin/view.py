"""The admin app (mounted at /admin with its own login): the operator's cockpit for the engine.

Layout in m3ui/ui/admin/layout.py, events in m3ui/ui/admin/events.py, logic in m3ui/admin/ (no Gradio).
"""

from __future__ import annotations

import gradio as gr

from m3ui.admin.console import AdminConsole
from m3ui.admin.fleet import FleetDesk
from m3ui.admin.tune import TuneDesk
from m3ui.admin.weights import WeightsDesk
from m3ui.services import AppServices
from m3ui.ui.admin.api_keys import ApiKeysEvents
from m3ui.ui.admin.events import AdminEvents
from m3ui.ui.admin.fleet import FleetEvents
from m3ui.ui.admin.guard import AdminGuard
from m3ui.ui.admin.layout import build_layout
from m3ui.ui.admin.placement import PlacementEvents
from m3ui.ui.admin.tune import TuneEvents
from m3ui.ui.admin.users import UsersEvents

TITLE = "m3ui admin — engine cockpit"


def build_admin_app(services: AppServices) -> gr.Blocks:
    with gr.Blocks(title=TITLE, fill_width=True) as demo:
        view = build_layout(fleet=services.fleet is not None)
        console, guard = AdminConsole(services), AdminGuard(services.policy)
        AdminEvents(view, console, WeightsDesk(), guard).wire(demo)
        PlacementEvents(view.placement, console, guard).wire()
        UsersEvents(view.users, services.policy.accounts, guard,
                    lambda name: services.end_sessions(name, {})).wire(view.users_tab)
        if view.api_keys is not None:
            ApiKeysEvents(view.api_keys, services.policy.accounts, guard).wire(view.users_tab)
        FleetEvents(view.fleet, FleetDesk(services.fleet), guard).wire(view.fleet_tab)
        TuneEvents(view.tune, TuneDesk(services), guard).wire(view.tune_tab)
    return demo
