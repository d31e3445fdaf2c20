"""Puts the guards around the ASGI app that mounts both Gradio apps, outermost first:
cookies marked Secure over https → Host allow-list → Origin check → admin token (passwordless admin only) →
m3ui's sign-in routes (throttled; pages without a session sent there) → the sign-up page → call checks."""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette

from m3ui.access import AccessPolicy
from m3ui.web.admin_token import AdminTokenGuard
from m3ui.web.api_guard import ApiGuard
from m3ui.web.host_guard import HostGuard
from m3ui.web.hosts import allowed_hosts
from m3ui.web.login_route import LoginDoor, LoginRoute
from m3ui.web.login_throttle import LoginThrottle
from m3ui.web.mounts import GradioMount
from m3ui.web.origin_guard import OriginGuard
from m3ui.web.secure_cookies import SecureCookies
from m3ui.web.signup import SignupRoute


def install_guards(app: Starlette, policy: AccessPolicy, mounts: tuple[GradioMount, ...],
                   doors: tuple[LoginDoor, ...], throttle: LoginThrottle, login_head: str,
                   gateway: tuple[Any, dict[str, Any]] | None = None) -> None:
    """`doors`: the apps' sign-ins (`login_head`: their page's <head>); `gateway`: the API gateway's layer and its
    arguments (m3ui/gateway/mount.py), inside the Host guard only."""
    # add_middleware wraps what was added before, so the last one added runs first.
    app.add_middleware(ApiGuard, mounts=mounts)
    if policy.accounts is not None:
        app.add_middleware(SignupRoute, accounts=policy.accounts)
    app.add_middleware(LoginRoute, doors=doors, throttle=throttle, head=login_head)
    admin = next((mount for mount in mounts if mount.name == "admin"), None)
    if admin is not None and policy.admin_open_locally:
        app.add_middleware(AdminTokenGuard, token=policy.admin_token, prefix=admin.prefix)
    app.add_middleware(OriginGuard, allowed_names=policy.allowed_hosts)
    if gateway is not None:
        app.add_middleware(gateway[0], **gateway[1])
    app.add_middleware(HostGuard, allowed=allowed_hosts(policy.ui_host, policy.allowed_hosts))
    app.add_middleware(SecureCookies)
