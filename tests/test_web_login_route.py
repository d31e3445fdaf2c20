"""m3ui's own sign-in on the real app over raw HTTP (Gradio's `auth_dependency` hook, docs/GRADIO.md): a page
asked for without a session is sent to m3ui's sign-in page; a refusal keeps the name and says so; a login sets
m3ui's session cookie (no Gradio token) and opens the app, Gradio's own routes included; the session check
route answers the page script; sign-out ends the session at the server; a chat session opens no admin app."""

import re

import httpx
import pytest
from gradio_client import Client

from tests.account_calls import SIGNED_IN, data_with_accounts, from_address
from tests.app_process import running_app

ADMIN_PASSWORD = "a-long-admin-password"
BOB = ("bob", "bobs-password")


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    folder = tmp_path_factory.mktemp("login-route")
    secret = folder / "admin.pw"
    secret.write_text(ADMIN_PASSWORD + "\n")
    secret.chmod(0o600)
    with running_app(folder, "--admin-password-file", str(secret), data_dir=data_with_accounts(folder, BOB)) as running:
        yield running


def login(c: httpx.Client, mount: str, user: str, password: str) -> httpx.Response:
    return c.post(f"{mount}/login", data={"username": user, "password": password})


def test_a_page_without_a_session_is_sent_to_the_sign_in_page(app):
    with from_address(app, "127.0.0.1") as c:
        for page, where in (("/", "/login"), ("/admin/", "/admin/login"), ("/admin", "/admin/login")):
            answer = c.get(page)
            assert answer.status_code == 303 and answer.headers["location"] == where, (page, answer.status_code)
        form = c.get("/login")
        assert form.status_code == 200 and "text/html" in form.headers["content-type"]
        assert 'name="username"' in form.text and 'type="password"' in form.text and 'action="/login"' in form.text
        assert 'href="/signup"' in form.text, "the chat's page leads to sign-up"
        assert c.get("/config").status_code == 401, "Gradio asks m3ui, and m3ui says nobody"
        assert c.get("/m3ui-session").status_code == 401


def test_a_refusal_keeps_the_name_and_says_so(app):
    with from_address(app, "127.0.1.1") as c:
        refused = login(c, "", "Bob<i>", "not-the-password")
        assert refused.status_code == 400
        assert "Wrong user name or password." in refused.text and 'role="alert"' in refused.text
        assert 'value="Bob&lt;i&gt;"' in refused.text, "the name kept, escaped"
        assert "set-cookie" not in refused.headers


def test_a_login_sets_m3uis_cookie_and_opens_the_app(app):
    with from_address(app, "127.0.2.1") as c:
        answer = c.post("/login", data={"username": " BOB ", "password": BOB[1]}, headers={"accept": "text/html"})
        assert answer.status_code == 303 and answer.headers["location"] == "/", "a browser goes on to the app"
        (cookie,) = answer.headers.get_list("set-cookie")
        assert re.match(r"m3ui-session-[0-9a-f]+=[\w-]{40,}; Path=/; Max-Age=\d+; HttpOnly; SameSite=Lax$", cookie)
        assert c.get("/").status_code == 200 and c.get("/m3ui-session").status_code == 200
        assert c.get("/gradio_api/login_check").status_code == 200
        assert c.get("/gradio_api/user").json() == "bob", "Gradio's request.username is the account's name"
        assert c.get("/admin/").status_code == 303, "a chat session opens no admin app"
        assert c.get("/admin/config").status_code == 401


def test_a_script_signs_in_as_gradio_client_expects(app):
    client = Client(app.url + "/", auth=BOB, verbose=False, download_files=False)
    assert client.view_api(print_info=False, return_format="dict")["named_endpoints"], "the API opens to it"


def test_sign_out_ends_the_session_at_the_server(app):
    with from_address(app, "127.0.3.1") as c:
        signed_in = login(c, "/admin", "admin", ADMIN_PASSWORD)
        assert signed_in.status_code == SIGNED_IN and signed_in.json() == {"success": True}
        kept = dict(c.cookies)
        assert c.get("/admin/").status_code == 200
        out = c.get("/admin/logout")
        assert out.status_code == 303 and out.headers["location"] == "/admin/login"
        assert "Max-Age=0" in out.headers["set-cookie"]
        c.cookies.update(kept)
        assert c.get("/admin/").status_code == 303 and c.get("/admin/m3ui-session").status_code == 401
    assert "audit: 'admin' signed out on every device in the admin app (1 sessions)" in app.log()
