"""Who may do what: the admin credential, the accounts (m3ui/accounts/), and where admin is served.

With accounts, a login of either app is checked against the database, and so is every later request
(m3ui.web.logins): an account disabled or demoted loses its sessions at once. The `admin` password, when
set, keeps working beside the accounts; an enabled account with role admin may use the admin app too.

Gradio exposes every event handler to any client that reaches the app, so hiding the admin tab protects
nothing. The admin UI is therefore a separate app with its own login, and every admin handler also checks
the user itself (`require_admin`), so a handler reached some other way still refuses.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import ipaddress
import os
import secrets
from dataclasses import dataclass, field

from m3ui.accounts import AccountStore, User

ADMIN_USER = "admin"
ADMIN_PASSWORD_ENV = "M3UI_ADMIN_PASSWORD"
LOCAL_ADMIN = "local-admin"  # the user name given to admin actions when admin runs without a password
DEFAULT_SESSION_HOURS = 7 * 24
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
    # Once given, logins are checked here instead of `chat_users` (which app.py has seeded into it).
    accounts: AccountStore | None = field(default=None, repr=False, compare=False)
    # Decided at start (the apps are mounted with or without a login): whether accounts exist / admin ones do.
    account_logins: bool = False
    admin_accounts: bool = False
    session_max_age_s: float = DEFAULT_SESSION_HOURS * 3600  # a login lasts this long, then asks again

    @classmethod
    def from_env(cls, ui_host: str, admin_password: str | None, chat_users: tuple[tuple[str, str], ...] = (),
                 allowed_hosts: tuple[str, ...] = (), accounts: AccountStore | None = None,
                 session_hours: float = DEFAULT_SESSION_HOURS) -> AccessPolicy:
        return cls(ui_host, admin_password or os.environ.get(ADMIN_PASSWORD_ENV) or None, chat_users, allowed_hosts,
                   accounts=accounts, account_logins=bool(accounts and accounts.count()),
                   admin_accounts=bool(accounts and accounts.count("admin")), session_max_age_s=session_hours * 3600)

    @property
    def chat_login(self) -> bool:
        """Whether the chat asks for a login (a --chat-user or any enabled account at start)."""
        return bool(self.chat_users) or self.account_logins

    @property
    def admin_login(self) -> bool:
        return bool(self.admin_password) or self.admin_accounts

    @property
    def admin_served(self) -> bool:
        """Admin needs a login (password or admin account), unless only this machine can reach the app."""
        return self.admin_login or is_loopback(self.ui_host)

    @property
    def admin_open_locally(self) -> bool:
        return self.admin_served and not self.admin_login

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
        if not is_loopback(self.ui_host) and not self.chat_login:
            found.append(f"chat is open to anyone who can reach {self.ui_host}: no account exists and no "
                         "--chat-user is set (python -m m3ui.users add NAME)")
        return found

    def _admin_password_login(self, username: str, password: str) -> bool:
        """The `admin` user with the admin password (constant-time comparison)."""
        if not self.admin_password:
            return False
        return _same(username, ADMIN_USER) and _same(password, self.admin_password)

    def check_admin_login(self, username: str, password: str) -> bool:
        """The admin app's login (m3ui.web.login_route): the admin password, or an enabled admin account."""
        if self._admin_password_login(username, password):
            return True
        user = self.accounts.authenticate(username, password) if self.accounts is not None else None
        return user is not None and user.is_admin

    def check_chat_login(self, username: str, password: str) -> bool:
        """The chat's login (m3ui.web.login_route): an enabled account (or, without accounts, a --chat-user pair),
        or the admin password."""
        if self._admin_password_login(username, password):
            return True
        if self.accounts is not None:
            return self.accounts.authenticate(username, password) is not None
        ok = False
        for user, secret in self.chat_users:
            ok |= _same(username, user) & _same(password, secret)
        return ok

    def signed_in_user(self, username: str | None) -> User | None:
        """The enabled account behind a signed-in request (None for the admin password's user or no account)."""
        if not username or self.accounts is None:
            return None
        return self.accounts.active(username)

    def session_stamp(self, username: str, admin_app: bool) -> str | None:
        """Whether a session of `username` may go on (checked on every request, m3ui.web.logins): None when not,
        else the stamp of the password it must have been signed in with. The admin password's user always may
        (while that password is the one set at start); an account only while it is enabled (and, in the admin
        app, an admin)."""
        if self.admin_password and username == ADMIN_USER:
            return self._admin_password_stamp
        if self.accounts is None:
            return ""
        user = self.accounts.active(username)
        if user is None or not (user.is_admin or not admin_app):
            return None
        return self.accounts.password_stamp(username)

    @functools.cached_property
    def _admin_password_stamp(self) -> str:
        """Sessions outlive a restart: one signed in with another admin password than this start's ends. A slow
        hash (once per start), as the stamp is kept in the database."""
        return hashlib.scrypt((self.admin_password or "").encode(), salt=b"m3ui admin session", n=2**14, r=8,
                              p=1, maxmem=64 * 2**20).hex()[:16]

    def require_admin(self, username: str | None) -> str:
        """Every admin handler calls this with the request's user; returns who acts, or raises."""
        if not self.admin_served:
            raise AccessDenied("the admin panel is disabled on this server")
        if self.admin_login:
            if self.admin_password and username == ADMIN_USER:
                return ADMIN_USER
            user = self.signed_in_user(username)
            if user is None or not user.is_admin:
                raise AccessDenied("admin only: log in at /admin as the admin user or with an admin account")
            return user.name
        return username or LOCAL_ADMIN
