"""Changing one's own password (the Account tab): the current password is checked as a login is.

A signed-in page could otherwise test guesses of the current password as fast as scrypt allows, with no trace.
Each guess goes through the login throttle under the person's name and the page's address (so guesses here and
at the login form share one count), and each outcome is one audit line. A change ends the account's other
sessions on every device and in both apps (a stolen cookie does not outlive it); the asking page's own stays.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from m3ui.accounts import AccountError, AccountStore
from m3ui.web.login_throttle import LoginThrottle

AUDIT = logging.getLogger("m3ui.audit")
# (user, the asking request's cookies: the session to keep) -> how many sessions were ended
EndSessions = Callable[[str, Mapping[str, str]], int]


class PasswordChangeRefused(ValueError):
    """Why the password was not changed, fit to show as is."""


@dataclass
class PasswordChange:
    accounts: AccountStore
    throttle: LoginThrottle
    end_sessions: EndSessions

    def change(self, user: str, client: str, current: str, new: str, again: str,
               cookies: Mapping[str, str]) -> None:
        keys = self.throttle.keys(client, user)
        wait = self.throttle.wait_seconds(keys)
        if wait > 0:
            AUDIT.warning("audit: password change throttled for user %r from %s (retry in %.0f s)", user, client,
                          wait)
            raise PasswordChangeRefused(f"Too many wrong passwords: try again in {math.ceil(wait)} s.")
        if not self.accounts.password_matches(user, current):
            failures = self.throttle.failed(keys)
            AUDIT.warning("audit: password change refused for user %r from %s: wrong current password (%d "
                          "failures in a row)", user, client, failures)
            raise PasswordChangeRefused("The current password is not right.")
        self.throttle.succeeded(keys)
        if new != again:
            raise PasswordChangeRefused("The two new passwords differ.")
        try:
            self.accounts.set_password(user, new)
        except AccountError as exc:
            raise PasswordChangeRefused(str(exc)) from None
        ended = self.end_sessions(user, cookies)
        AUDIT.info("audit: password of %r changed from %s; %d other sessions ended", user, client, ended)
