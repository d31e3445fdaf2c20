"""Cookies over https carry `Secure` (issue 27 #11), on the real app behind a --trusted-proxy: m3ui's
session cookie (HttpOnly, SameSite=Lax) and the admin token cookie, when the proxy says the request came
over https. Over plain http they stay as they were (a login must work there), and a client that is not the
trusted proxy cannot claim https."""

import httpx
import pytest

from m3ui.accounts import AccountStore
from tests.account_calls import from_address
from tests.app_process import running_app

ALICE = ("alice", "alices-password")
PROXY = "127.0.0.1"
HTTPS = {"X-Forwarded-Proto": "https"}
LOGIN = {"username": ALICE[0], "password": ALICE[1]}


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    folder = tmp_path_factory.mktemp("secure-cookies")
    AccountStore.open(folder / "data").add(*ALICE)  # a user account: the admin stays passwordless (token cookie)
    with running_app(folder, "--trusted-proxy", PROXY, data_dir=folder / "data") as running:
        yield running


def set_cookies(answer: httpx.Response) -> dict[str, str]:
    """Each cookie the answer sets: its name -> its attributes, lower case."""
    cookies = {}
    for line in answer.headers.get_list("set-cookie"):
        name, _, rest = line.partition("=")
        cookies[name] = rest.partition(";")[2].lower()
    return cookies


def secure(attributes: str) -> bool:
    return "secure" in [part.strip().split("=")[0] for part in attributes.split(";")]


def test_every_cookie_is_secure_over_https_from_the_trusted_proxy(app):
    with from_address(app, PROXY) as proxy:
        login = set_cookies(proxy.post("/login", data=LOGIN, headers=HTTPS))
        admin = set_cookies(proxy.get(app.admin_url, headers=HTTPS))
    (session,) = [a for name, a in login.items() if name.startswith("m3ui-session-")]
    assert "httponly" in session and "samesite=lax" in session, session
    assert any(name.startswith("m3ui-admin-token-") for name in admin), admin
    assert all(secure(attributes) for attributes in [*login.values(), *admin.values()]), (login, admin)


def test_plain_http_and_a_claim_from_another_client_keep_cookies_usable_over_http(app):
    with from_address(app, PROXY) as proxy, from_address(app, "127.0.0.2") as stranger:
        plain = set_cookies(proxy.post("/login", data=LOGIN))
        claimed = set_cookies(stranger.post("/login", data=LOGIN,
                                            headers=HTTPS))
        admin = set_cookies(stranger.get(app.admin_url, headers=HTTPS))
    for cookies in (plain, claimed, admin):
        unsecure = [a for name, a in cookies.items() if name.startswith(("m3ui-session-", "m3ui-admin"))]
        assert unsecure and not any(secure(a) for a in unsecure), cookies
