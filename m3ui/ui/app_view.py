"""Assembles the pages: the main app (chat, tools, monitor) at `/` and the admin app at `/admin/`.

The admin app is a separate Gradio app with its own login, so none of its handlers is reachable through
the main app; each admin handler checks the user again (m3ui.access.AccessPolicy.require_admin).
"""

from __future__ import annotations

from pathlib import Path

import fastapi
import gradio as gr

from m3ui.services import AppServices
from m3ui.ui.admin.view import build_admin_app
from m3ui.ui.chat_view import build_chat_tab
from m3ui.ui.header_view import build_header
from m3ui.ui.monitor.view import build_monitor_tab
from m3ui.ui.tools_view import build_tools_tab

ASSETS = Path(__file__).resolve().parents[2] / "assets"
# Every page's styles, and its scripts (assets/js/*.js, each one concern, run once per page load).
CSS_FILES = ("m3ui.css",)
JS_DIR = ASSETS / "js"
TITLE = "m3ui — MiniMax-M3 on SGLang + KT-Kernel"


def build_main_app(services: AppServices) -> gr.Blocks:
    with gr.Blocks(title=TITLE) as demo:
        build_header(services)
        with gr.Tabs():
            with gr.Tab("Chat", id="chat"):
                build_chat_tab(services)
            with gr.Tab("Tools", id="tools"):
                build_tools_tab(services)
            with gr.Tab("Monitor", id="monitor"):
                build_monitor_tab(services)
    # Gradio serializes each listener by default; a chat app must serve its users at once.
    demo.queue(default_concurrency_limit=None)
    return demo


def build_asgi_app(services: AppServices) -> fastapi.FastAPI:
    app = fastapi.FastAPI(title=TITLE, docs_url=None, redoc_url=None, openapi_url=None)
    policy = services.policy
    css = page_css()
    head = page_head()
    if policy.admin_served:
        admin = build_admin_app(services)
        admin.queue(default_concurrency_limit=None)
        gr.mount_gradio_app(app, admin, path="/admin", css=css, head=head,
                            auth=policy.check_admin_login if policy.admin_password else None,
                            auth_message="m3ui admin: log in as 'admin'")
    chat_auth = policy.check_chat_login if policy.chat_users else None
    gr.mount_gradio_app(app, build_main_app(services), path="", css=css, head=head, auth=chat_auth)
    return app


def page_css() -> str:
    return "\n".join((ASSETS / name).read_text(encoding="utf-8") for name in CSS_FILES)


def page_head() -> str:
    """The page scripts, inlined into <head> (no extra request, nothing fetched from elsewhere)."""
    scripts = sorted(JS_DIR.glob("*.js")) if JS_DIR.is_dir() else []
    return "".join(f"<script>{path.read_text(encoding='utf-8')}</script>" for path in scripts)
