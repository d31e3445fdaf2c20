"""The Account tab (shown when the chat asks for a login): who is signed in, sign-out (this device or everywhere),
the person's own usage per day and quota, and changing one's own password.

Every handler takes the person from the request's login (Gradio's `request.username`), never from an input: no
value a client sends can make it show or change another account.
"""

from __future__ import annotations

import gradio as gr

from m3ui.services import AppServices
from m3ui.ui.account_chats import build_account_chats
from m3ui.ui.monitor.format import esc
from m3ui.ui.request_origin import request_origin
from m3ui.ui.usage_table import usage_table
from m3ui.web.password_change import PasswordChange, PasswordChangeRefused

OWN_DAYS = 60
NEAR_LIMIT = 0.8  # share of the daily quota used from which the Account tab warns
SIGN_OUT = ('<a class="m3-sign-out" id="m3-sign-out" href="logout?all_session=false">Sign out</a> · '
            '<a class="m3-sign-out" id="m3-sign-out-all" href="logout">Sign out on every device</a>')


class AccountTab:
    def __init__(self, services: AppServices) -> None:
        self.policy, self.usage = services.policy, services.usage
        accounts = services.policy.accounts
        self.password = PasswordChange(accounts, services.login_throttle,
                                       lambda user, cookies: services.end_sessions(user, cookies)) if accounts else None

    def me(self, request: gr.Request) -> tuple[str, str]:
        user = self.policy.signed_in_user(request.username if request else None)
        if user is None or self.usage is None:
            name = esc(request.username or "") if request else ""
            return f'<div class="m3-account">Signed in as <b>{name}</b> (no account: nothing is counted). ' \
                   f"{SIGN_OUT}</div>", ""
        who = f'<div class="m3-account">Signed in as <b>{esc(user.name)}</b> ({esc(user.role)}). {SIGN_OUT}</div>'
        quota = self.usage.quota_of(user)
        return who, quota_left(self.usage.tokens_today(user), quota) + usage_table(
            self.usage.days(user.name, OWN_DAYS), with_user=False, quota=quota)

    def change_password(self, current: str, new: str, again: str, request: gr.Request) -> tuple[str, str, str]:
        user = self.policy.signed_in_user(request.username if request else None)
        if user is None or self.password is None:
            raise gr.Error("Only an account's password can be changed here.", title="Not changed",
                           print_exception=False)
        client, cookies = request_origin(request)  # the cookies say which session asks: it stays signed in
        try:
            self.password.change(user.name, client, current or "", new or "", again or "", cookies)
        except PasswordChangeRefused as exc:  # audited; a refusal is no error of the app's
            raise gr.Error(str(exc), title="Not changed", print_exception=False) from None
        gr.Info("Password changed: your other sessions are signed out.")
        return "", "", ""


def quota_left(used: int, quota: int | None) -> str:
    """How much of today's quota is left, in words: a warning near the limit, and plainly when it is used up."""
    if quota is None:
        return '<div class="m3-quota" data-quota="none">No daily quota: your answers are counted, not limited.</div>'
    left = max(0, quota - used)
    if left == 0:
        kind, text = "out", (f"Today's quota is used up: {used:,} of {quota:,} tokens. New questions are refused "
                             "until 00:00 UTC, or until an admin raises your quota.")
    elif used >= NEAR_LIMIT * quota:
        kind, text = "near", (f"Only {left:,} of your {quota:,} daily tokens are left today (UTC): a long answer "
                              "may not fit.")
    else:
        kind, text = "ok", f"{left:,} of your {quota:,} daily tokens are left today (UTC)."
    return f'<div class="m3-quota m3-quota-{kind}" data-quota="{kind}" data-left="{left}">{esc(text)}</div>'


def build_account_tab(services: AppServices, shown: gr.Tab) -> None:
    """The tab's content; filled each time `shown` (its gr.Tab) is selected."""
    tab = AccountTab(services)
    who = gr.HTML(elem_id="m3-account-who")
    gr.HTML('<div class="m3-account-title">Your usage per day (UTC)</div>')
    usage = gr.HTML(elem_id="m3-account-usage")
    refresh = gr.Button("Refresh", size="sm", elem_id="m3-account-refresh")
    with gr.Accordion("Change your password", open=False):
        current = gr.Textbox(label="Current password", type="password", max_length=1024)
        new = gr.Textbox(label="New password (8+ characters)", type="password", max_length=1024)
        again = gr.Textbox(label="New password again", type="password", max_length=1024)
        change = gr.Button("Change password", elem_id="m3-account-change-password")
    build_account_chats(services)
    gr.on([shown.select, refresh.click], tab.me, None, [who, usage], api_visibility="private",
          show_progress="hidden")
    change.click(tab.change_password, [current, new, again], [current, new, again], api_visibility="private")
