"""The admin's Users tab: the accounts (add, disable/enable, reset password, change role, daily token quota),
sign-up on or off, quotas per role, and everyone's usage per day. Every handler goes through AdminGuard.

Changes reach signed-in people at once: a disabled or demoted account loses its sessions at its next request
(m3ui.web.logins), and a reset password ends every session of the account at once. Without accounts (an
app built without a database) the tab says so and wires nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import gradio as gr

from m3ui.accounts import AccountError, AccountStore
from m3ui.accounts.store import ROLES
from m3ui.accounts.usage import UsageLedger, local_time, parse_quota
from m3ui.admin.console import Outcome
from m3ui.ui.admin.guard import AdminGuard
from m3ui.ui.admin.markup import outcome_html
from m3ui.ui.monitor.format import esc
from m3ui.ui.usage_table import usage_table
from m3ui.ui.wide_table import scrolling

AUDIT = logging.getLogger("m3ui.audit")
USAGE_DAYS = 200  # rows of the usage table


@dataclass
class UsersPanel:
    table: gr.HTML
    outcome: gr.HTML
    new_name: gr.Textbox
    new_password: gr.Textbox
    new_role: gr.Dropdown
    add: gr.Button
    chosen: gr.Dropdown
    disable: gr.Button
    enable: gr.Button
    password: gr.Textbox
    set_password: gr.Button
    role: gr.Dropdown
    set_role: gr.Button
    quota: gr.Textbox
    set_quota: gr.Button
    signup: gr.Checkbox
    role_quota_user: gr.Textbox
    role_quota_admin: gr.Textbox
    save_settings: gr.Button
    usage: gr.HTML
    refresh: gr.Button


def build_users_panel() -> UsersPanel:
    gr.HTML('<div class="m3a-dim">Accounts sign in to the chat; an account with role admin also to this panel. '
            "A disabled or demoted account is signed out everywhere within seconds. Quotas count prompt + "
            "completion tokens per UTC day and are checked before each request (empty: no limit).</div>")
    outcome = gr.HTML(elem_id="m3-users-outcome", elem_classes=["m3a-collapse-empty"])
    table = gr.HTML(elem_id="m3-users-table")
    with gr.Row(equal_height=False):
        with gr.Column(min_width=320), gr.Group(elem_classes=["m3a-panel"]):
            gr.HTML('<div class="m3a-panel-title">Add an account</div>')
            new_name = gr.Textbox(label="Name", elem_id="m3-users-new-name", max_length=64)
            new_password = gr.Textbox(label="Password (8+ characters)", type="password",
                                      elem_id="m3-users-new-password", max_length=1024)
            new_role = gr.Dropdown(list(ROLES), value="user", label="Role", elem_id="m3-users-new-role")
            add = gr.Button("Add", variant="primary", elem_id="m3-users-add")
        with gr.Column(min_width=320), gr.Group(elem_classes=["m3a-panel"]):
            gr.HTML('<div class="m3a-panel-title">Change an account</div>')
            chosen = gr.Dropdown([], label="Account", elem_id="m3-users-chosen")
            with gr.Row():
                disable = gr.Button("Disable", variant="stop", elem_id="m3-users-disable")
                enable = gr.Button("Enable", elem_id="m3-users-enable")
            password = gr.Textbox(label="New password", type="password", elem_id="m3-users-password",
                                  max_length=1024)
            set_password = gr.Button("Reset password", elem_id="m3-users-set-password")
            role = gr.Dropdown(list(ROLES), value="user", label="Role", elem_id="m3-users-role")
            set_role = gr.Button("Change role", elem_id="m3-users-set-role")
            quota = gr.Textbox(label="Daily token quota (empty: the role's)", elem_id="m3-users-quota", max_length=12)
            set_quota = gr.Button("Set quota", elem_id="m3-users-set-quota")
        with gr.Column(min_width=280), gr.Group(elem_classes=["m3a-panel"]):
            gr.HTML('<div class="m3a-panel-title">Sign-up and quotas per role</div>')
            signup = gr.Checkbox(label="Anyone who reaches the app may create an account (role user)",
                                 elem_id="m3-users-signup")
            role_quota_user = gr.Textbox(label="Daily token quota of role user", elem_id="m3-users-quota-user",
                                         max_length=12)
            role_quota_admin = gr.Textbox(label="Daily token quota of role admin", elem_id="m3-users-quota-admin",
                                          max_length=12)
            save_settings = gr.Button("Save", elem_id="m3-users-save-settings")
    gr.HTML('<div class="m3a-panel-title">Usage per person and day</div>')
    usage = gr.HTML(elem_id="m3-users-usage")
    refresh = gr.Button("Refresh", size="sm", elem_id="m3-users-refresh")
    return UsersPanel(table, outcome, new_name, new_password, new_role, add, chosen, disable, enable, password,
                      set_password, role, set_role, quota, set_quota, signup, role_quota_user, role_quota_admin,
                      save_settings, usage, refresh)


def users_table(store: AccountStore) -> str:
    rows = "".join(
        f'<tr data-user="{esc(u.name)}"><td>{esc(u.name)}</td><td>{esc(u.role)}</td>'
        f'<td>{"enabled" if u.enabled else "<b>disabled</b>"}</td>'
        f'<td>{"" if u.daily_token_quota is None else f"{u.daily_token_quota:,}"}</td>'
        f"<td>{local_time(u.created_at)}</td><td>{local_time(u.last_login_at)}</td></tr>" for u in store.list())
    if not rows:
        return ('<div class="m3a-dim">No accounts yet: add one below (the chat asks for a login once accounts exist '
                "at the next start).</div>")
    return scrolling('<table class="m3-usage"><thead><tr><th>name</th><th>role</th><th>state</th><th>own quota</th>'
                     f"<th>created</th><th>last login</th></tr></thead><tbody>{rows}</tbody></table>", "Accounts")


class UsersEvents:
    def __init__(self, panel: UsersPanel, accounts: AccountStore | None, guard: AdminGuard,
                 end_sessions: Callable[[str], int]) -> None:
        self.panel, self.accounts, self.guard, self.end_sessions = panel, accounts, guard, end_sessions
        self.usage = UsageLedger(accounts) if accounts is not None else None

    def listed(self, outcome: Outcome | None = None) -> list[object]:
        """Outcome, the table, the account choices, the settings and the usage, as they are now."""
        if self.accounts is None or self.usage is None:
            missing = outcome_html(Outcome("info", "This app runs without an accounts database."))
            return [missing, "", gr.Dropdown(choices=[]), False, "", "", ""]
        names = [u.name for u in self.accounts.list()]
        quotas = ["" if (q := self.usage.role_quota(role)) is None else str(q) for role in ROLES]
        return [outcome_html(outcome) if outcome else "", users_table(self.accounts), gr.Dropdown(choices=names),
                self.accounts.signup_enabled, *quotas, usage_table(self.usage.days(limit=USAGE_DAYS))]

    def act(self, what: str, change: Callable[[], str]) -> list[object]:
        """Run one change; its AccountError becomes the outcome (nothing else changed)."""
        try:
            message = change()
        except AccountError as exc:
            return self.listed(Outcome("error", f"{what}: {exc}"))
        return self.listed(Outcome("ok", message))

    def add(self, name: str, password: str, role: str) -> list[object]:
        return self.act("Not added", lambda: f"Added {self._store.add(name or '', password or '', role).name}.")

    def enable(self, name: str | None, enabled: bool) -> list[object]:
        verb = "enabled" if enabled else "disabled (signed out everywhere within seconds)"
        return self.act("Not changed", lambda: f"{self._store.set_enabled(name or '', enabled).name}: {verb}.")

    def reset_password(self, name: str | None, password: str) -> list[object]:
        def change() -> str:
            user = self._store.set_password(name or "", password or "")
            ended = self.end_sessions(user.name)
            AUDIT.info("audit: password of %r reset in the admin app; %d sessions ended", user.name, ended)
            return f"{user.name}: password reset, signed out everywhere ({ended} sessions)."
        return self.act("Not changed", change)

    def change_role(self, name: str | None, role: str) -> list[object]:
        return self.act("Not changed", lambda: f"{self._store.set_role(name or '', role).name}: role {role}.")

    def set_quota(self, name: str | None, quota: str) -> list[object]:
        def change() -> str:
            user = self._store.set_quota(name or "", parse_quota(quota))
            return f"{user.name}: daily token quota {'of its role' if user.daily_token_quota is None else quota}."
        return self.act("Not changed", change)

    def save_settings(self, signup: bool, quota_user: str, quota_admin: str) -> list[object]:
        def change() -> str:
            quotas = [parse_quota(quota_user), parse_quota(quota_admin)]  # both read before either is saved
            assert self.usage is not None
            for role, quota in zip(ROLES, quotas, strict=True):
                self.usage.set_role_quota(role, quota)
            self._store.set_signup(bool(signup))
            return f"Saved: sign-up {'on' if signup else 'off'}, quotas per role set."
        return self.act("Not saved", change)

    @property
    def _store(self) -> AccountStore:
        if self.accounts is None:
            raise AccountError("this app runs without an accounts database")
        return self.accounts

    def wire(self, tab: gr.Tab) -> None:
        p, on = self.panel, self.guard.on
        out = [p.outcome, p.table, p.chosen, p.signup, p.role_quota_user, p.role_quota_admin, p.usage]
        on([tab.select, p.refresh.click], self.listed, None, out, "users_list", show_progress="hidden")
        on(p.add.click, self.add, [p.new_name, p.new_password, p.new_role], out, "users_add")
        on(p.disable.click, lambda name: self.enable(name, False), [p.chosen], out, "users_disable")
        on(p.enable.click, lambda name: self.enable(name, True), [p.chosen], out, "users_enable")
        on(p.set_password.click, self.reset_password, [p.chosen, p.password], out, "users_password")
        on(p.set_role.click, self.change_role, [p.chosen, p.role], out, "users_role")
        on(p.set_quota.click, self.set_quota, [p.chosen, p.quota], out, "users_quota")
        on(p.save_settings.click, self.save_settings, [p.signup, p.role_quota_user, p.role_quota_admin], out,
           "users_settings")
