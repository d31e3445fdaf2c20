"""Who may do what: the admin credential, optional chat-user credentials, and where admin is served.

Gradio exposes every event handler to any client that reaches the app, so hiding the admin tab protects
nothing. The admin UI is therefore a separate app with its own login, and every admin handler also checks
the user itself (`require_admin`), so a handler reached some other way still refuses.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import secrets
from dataclasses import dataclass, field

ADMIN_USER = "admin"
ADMIN_PASSWORD_ENV = "M3UI_ADMIN_PASSWORD"
LOCAL_ADMIN = "local-admin"  # the user name given to admin actions when admin runs without a password
SHORT_PASSWORD = 12  # an admin password shorter than this gets a startup warning


class AccessDenied(PermissionError):
    """An admin action was asked for by someone who is not the admin."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _same(typed: str, expected: str) -> bool:
    """Constant-time; compared as UTF-8 bytes because compare_digest raises TypeError on non-ASCII str."""
    return hmac.compare_digest(typed.encode(), expected.encode())


@dataclass(frozen=True)
class AccessPolicy:
    ui_host: str
    admin_password: str | None = None
    chat_users: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    allowed_hosts: tuple[str, ...] = ()  # names besides the listen address (--allowed-host)
    # The passwordless loopback admin also needs this per-start token (m3ui.web.admin_token).
    admin_token: str = field(default_factory=lambda: secrets.token_urlsafe(24), repr=False)

    @classmethod
    def from_env(cls, ui_host: str, admin_password: str | None, chat_users: tuple[tuple[str, str], ...] = (),
                 allowed_hosts: tuple[str, ...] = ()) -> AccessPolicy:
        return cls(ui_host, admin_password or os.environ.get(ADMIN_PASSWORD_ENV) or None, chat_users, allowed_hosts)

    @property
    def admin_served(self) -> bool:
        """Admin needs a password, unless only this machine can reach the app."""
        return bool(self.admin_password) or is_loopback(self.ui_host)

    @property
    def admin_open_locally(self) -> bool:
        return self.admin_served and not self.admin_password

    def warnings(self) -> list[str]:
        """What the operator should know at startup about who can reach what."""
        found = []
        if self.admin_open_locally:
            found.append(f"admin panel has no password: served only because the app listens on {self.ui_host}, "
                         f"and only with the token in the admin URL printed below; set --admin-password-file or "
                         f"{ADMIN_PASSWORD_ENV} before listening on other addresses")
        elif not self.admin_served:
            found.append(f"admin panel disabled: the app listens on {self.ui_host} and no admin password is set "
                         f"(--admin-password-file or {ADMIN_PASSWORD_ENV})")
        elif self.admin_password and len(self.admin_password) < SHORT_PASSWORD:
            found.append(f"the admin password is short ({len(self.admin_password)} characters): use "
                         f"{SHORT_PASSWORD} or more")
        if not is_loopback(self.ui_host) and not self.chat_users:
            found.append(f"chat is open to anyone who can reach {self.ui_host}: no --chat-user is set")
        return found

    def check_admin_login(self, username: str, password: str) -> bool:
        """Gradio's auth callable for the admin app (constant-time comparison)."""
        if not self.admin_password:
            return False
        return _same(username, ADMIN_USER) and _same(password, self.admin_password)

    def check_chat_login(self, username: str, password: str) -> bool:
        ok = False
        for user, secret in self.chat_users:
            ok |= _same(username, user) & _same(password, secret)
        return ok or self.check_admin_login(username, password)

    def require_admin(self, username: str | None) -> str:
        """Every admin handler calls this with the request's user; returns who acts, or raises."""
        if not self.admin_served:
            raise AccessDenied("the admin panel is disabled on this server")
        if self.admin_password:
            if username != ADMIN_USER:
                raise AccessDenied("admin only: log in at /admin as the admin user")
            return ADMIN_USER
        return username or LOCAL_ADMIN
