"""Assembles the pages: the main app (chat, tools, monitor) at `/` and the admin app at `/admin/`.

The admin app is a separate Gradio app with its own login and its own file cache, so none of its handlers
or exports is reachable through the main app; each admin handler checks the user again
(m3ui.access.AccessPolicy.require_admin). Both apps sit behind the HTTP guards of m3ui.web.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import fastapi
import gradio as gr
from starlette.requests import HTTPConnection
from starlette.types import Scope

from m3ui.accounts.sessions import SessionStore
from m3ui.accounts.sqlite_db import DB_FILE_NAME, SqliteDb
from m3ui.documents.limits import DEFAULT_LIMITS
from m3ui.gateway.mount import GatewayLayer
from m3ui.gateway.setup import app_gateway
from m3ui.live.channel import LiveChannel
from m3ui.live.early_ask import EarlyAsk
from m3ui.live.holder import LiveHolder
from m3ui.owned_temp_dir import owned_temp_dir
from m3ui.services import AppServices
from m3ui.ui.account_view import build_account_tab
from m3ui.ui.admin.view import build_admin_app
from m3ui.ui.api_keys_view import build_api_keys
from m3ui.ui.chat.view import build_chat_tab
from m3ui.ui.connect_view import build_connect_tab
from m3ui.ui.gradio_contacts.absent_modules import mark_absent
from m3ui.ui.gradio_contacts.lazy_session_config import lazy_session_config
from m3ui.ui.gradio_contacts.progress_targets import untrack_hidden_progress
from m3ui.ui.gradio_contacts.queue_pacing import pace_queue
from m3ui.ui.header_view import build_header
from m3ui.ui.monitor.view import build_monitor_tab
from m3ui.ui.real_engine_page import real_engine_route
from m3ui.ui.tools.view import build_tools_tab
from m3ui.web.asgi import client_address
from m3ui.web.early_head import EarlyHead
from m3ui.web.guards import install_guards
from m3ui.web.login_route import LoginDoor
from m3ui.web.logins import Logins, end_sessions
from m3ui.web.mounts import GradioMount

ASSETS = Path(__file__).resolve().parents[2] / "assets"
# Every page's styles, and its scripts (assets/js/*.js, each one concern, run once per page load).
CSS_FILES = ("fonts.css", "m3ui.css", "theme.css", "phone.css", "simulated.css", "monitor.css", "tables.css",
             "attach.css")
JS_DIR = ASSETS / "js"
# Scripts that must run before the first paint (Gradio runs the others after it mounts): put into the HTML itself.
EARLY_JS_DIR = ASSETS / "head"
ADMIN_PATH = "/admin"
ADMIN_FILES_PREFIX = "m3ui-admin-files-"
# Components through which a browser uploads files (the upload route is refused for an app without one).
UPLOAD_COMPONENTS = (gr.File, gr.Files, gr.UploadButton, gr.Image, gr.Audio, gr.Video, gr.Gallery, gr.Model3D,
                     gr.ImageEditor, gr.MultimodalTextbox)
TITLE = "m3ui — MiniMax-M3 on SGLang + KT-Kernel"
ADMIN_LOGIN_MESSAGE = "m3ui admin: sign in as 'admin' or with an admin account."
CHAT_LOGIN_MESSAGE = "Sign in with your m3ui account."


def build_main_app(services: AppServices) -> gr.Blocks:
    with gr.Blocks(title=TITLE) as demo:
        build_header(services)
        with gr.Tabs():
            with gr.Tab("Chat", id="chat"):
                build_chat_tab(services, demo)
            with gr.Tab("Tools", id="tools"):
                build_tools_tab(services, demo)
            with gr.Tab("Monitor", id="monitor") as monitor_tab:
                build_monitor_tab(services, monitor_tab)
            if services.policy.chat_login:
                with gr.Tab("Account", id="account") as account_tab:
                    build_account_tab(services, account_tab)
                    build_api_keys(services, account_tab)
                with gr.Tab("Connect", id="connect") as connect_tab:
                    build_connect_tab(services, connect_tab)
    # Gradio serializes each listener by default; a chat app must serve its users at once.
    demo.queue(default_concurrency_limit=None)
    pace_queue(demo)
    untrack_hidden_progress(demo)
    return demo


def build_asgi_app(services: AppServices) -> fastapi.FastAPI:
    """Both apps, behind the HTTP guards of m3ui.web (Host, Origin, admin token, logins, API calls)."""
    # Gradio's own costs (m3ui.ui.gradio_contacts, docs/GRADIO.md): its per-event `import matplotlib` then fails
    # at once, and a new session no longer builds every component's configuration
    mark_absent()
    lazy_session_config()
    app = fastapi.FastAPI(title=TITLE, docs_url=None, redoc_url=None, openapi_url=None)
    policy = services.policy
    css = page_css()
    head = page_head()
    # No Gradio run history: it copies every event's inputs and outputs (whole chats) into the browser's storage,
    # rereading and rewriting up to 100 of them at each event (~150 ms of the page's CPU per answer, before its
    # first token, with a few dozen saved chats), and offers to upload them to a Hugging Face bucket.
    mounted = {"run_history": False, "max_file_size": DEFAULT_LIMITS.max_file_bytes}  # uploads: attachments
    mounts = []
    doors: list[LoginDoor] = []
    sessions = session_store(services) if policy.admin_login or policy.chat_login else None
    admin_files: list[str] = []
    if policy.admin_served:
        admin = build_admin_app(services)
        admin.queue(default_concurrency_limit=None)
        pace_queue(admin)
        untrack_hidden_progress(admin)
        admin_files.append(private_file_cache(app, admin))
        admin_logins = Logins("admin", ADMIN_PATH, sessions, policy.session_stamp, policy.session_max_age_s) \
            if sessions is not None and policy.admin_login else None
        if admin_logins is not None:
            doors.append(LoginDoor(admin_logins, policy.check_admin_login, ADMIN_LOGIN_MESSAGE))
        gr.mount_gradio_app(app, admin, path=ADMIN_PATH, css=css, head=head, allowed_paths=admin_files, **mounted,
                            auth_dependency=admin_logins.gradio_user if admin_logins is not None else None)
        mounts.append(GradioMount(ADMIN_PATH, "admin", admin.fns, takes_uploads(admin), admin_logins))
    main = build_main_app(services)
    chat_logins = Logins("chat", "", sessions, policy.session_stamp, policy.session_max_age_s) \
        if sessions is not None and policy.chat_login else None
    if chat_logins is not None:
        doors.append(LoginDoor(chat_logins, policy.check_chat_login, CHAT_LOGIN_MESSAGE,
                               signup=policy.accounts is not None))
    chat = GradioMount("", "chat", main.fns, takes_uploads(main), chat_logins)
    services.live_holder = live_holder(chat)

    def holder(scope: Scope) -> LiveHolder:
        return services.live_holder(client_address(scope), chat.user(scope), HTTPConnection(scope).cookies)

    # The page's own routes, added before the main app's mount, which takes every path.
    app.router.routes.append(LiveChannel(services.live_feeds, chat.logged_in, holder).route())
    app.router.routes.append(real_engine_route())
    app.router.routes.append(EarlyAsk(lambda *asked: services.send_early(*asked), chat.logged_in, chat.user,
                                      services.live_feeds, holder).route())
    gr.mount_gradio_app(app, main, path="", css=css, head=head, blocked_paths=admin_files, **mounted,
                        auth_dependency=chat_logins.gradio_user if chat_logins is not None else None)
    mounts.append(chat)
    early = page_head(EARLY_JS_DIR)
    app.add_middleware(EarlyHead, snippet=early)
    every = tuple(door.logins for door in doors)
    services.end_sessions = lambda user, cookies: end_sessions(every, user, cookies)
    gateway = app_gateway(services.link, policy.accounts, services.gateway_key, services.gateway_limits,
                          lambda: services.fleet)
    layer = {"gateway": gateway, "allowed_names": policy.allowed_hosts, "cors_origin": services.gateway_cors}
    install_guards(app, policy, tuple(mounts), tuple(doors), services.login_throttle, early, (GatewayLayer, layer))
    return app


def live_holder(chat: GradioMount) -> Callable[[str, str | None, Mapping[str, str]], LiveHolder]:
    """Who uses a live ticket, from a request's client address, user and cookies (the chat app's login token)."""

    def holder(client: str, user: str | None, cookies: Mapping[str, str]) -> LiveHolder:
        return LiveHolder.of(client, user, chat.logins.token_in(cookies) if chat.logins is not None else None)

    return holder


def private_file_cache(app: fastapi.FastAPI, blocks: gr.Blocks) -> str:
    """A file cache of the app's own (0700, removed at exit) instead of Gradio's one shared cache, which the
    main app serves to anyone at /gradio_api/file=...: the admin app's exports (engine logs) stay admin-only."""
    folder = owned_temp_dir(ADMIN_FILES_PREFIX)
    app.state.admin_files = folder  # kept alive with the app; its finalizer deletes the folder at exit
    for block in (blocks, *blocks.blocks.values()):
        block.GRADIO_CACHE = folder.name
    return folder.name


def session_store(services: AppServices) -> SessionStore:
    """The login sessions, in the accounts database (one of its own in the data dir when the app runs without
    accounts: an admin password, or tests' --chat-user pairs)."""
    accounts = services.policy.accounts
    return SessionStore(accounts.db if accounts is not None else SqliteDb(services.data_dir / DB_FILE_NAME))


def takes_uploads(blocks: gr.Blocks) -> bool:
    return any(isinstance(block, UPLOAD_COMPONENTS) and block.interactive is not False
               for block in blocks.blocks.values())


def page_css() -> str:
    return "\n".join((ASSETS / name).read_text(encoding="utf-8") for name in CSS_FILES)


def page_head(folder: Path = JS_DIR) -> str:
    """The page scripts, inlined into <head> (no extra request, nothing fetched from elsewhere)."""
    scripts = sorted(folder.glob("*.js")) if folder.is_dir() else []
    return "".join(f"<script>{path.read_text(encoding='utf-8')}</script>" for path in scripts)
