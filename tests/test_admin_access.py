"""Admin access over HTTP, on the real app (`python app.py --admin-password X --chat-user bob:pw`): every
endpoint of the admin app, enumerated from its own config, refuses anonymous clients and chat users; the
admin is let through; the main app at / exposes no admin handler at all."""

import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import httpx
import pytest

from tests.account_calls import SIGNED_IN
from tests.app_process import running_app
from tests.web_requests import run

ADMIN_PASSWORD = "adm1n-Secret"
BOB = ("bob", "pw")
API = "/gradio_api"


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with running_app(tmp_path_factory.mktemp("access"), "--admin-password", ADMIN_PASSWORD,
                     "--chat-user", ":".join(BOB)) as running:
        yield running


def client(app) -> httpx.Client:
    return httpx.Client(base_url=app.url, trust_env=False, timeout=15)


@contextmanager
def logged_in(app, mount: str, user: str, password: str) -> Iterator[httpx.Client]:
    with client(app) as c:
        answer = c.post(f"{mount}/login", data={"username": user, "password": password})
        assert answer.status_code == SIGNED_IN, answer.text
        yield c


@pytest.fixture(scope="module")
def admin_config(app) -> dict:
    with logged_in(app, "/admin", "admin", ADMIN_PASSWORD) as admin:
        answer = admin.get("/admin/config")
        assert answer.status_code == 200
        return answer.json()


def admin_endpoints(config: dict) -> list[tuple[int, str | None, int]]:
    """(fn_index, api_name, number of inputs) of every event the admin app serves."""
    return [(d["id"], d.get("api_name"), len(d.get("inputs", []))) for d in config["dependencies"]]


def attempts(fn_index: int, api_name: str | None, n_inputs: int):
    """Every way a client can ask Gradio to run a handler."""
    data = [None] * n_inputs
    yield f"/admin{API}/queue/join", {"data": data, "fn_index": fn_index, "session_hash": uuid.uuid4().hex}
    if api_name:
        for route in ("call", "call/v2", "run", "api"):
            yield f"/admin{API}/{route}/{api_name}", {"data": data}


def test_the_admin_app_serves_the_actions_the_issue_names(admin_config):
    names = {name for _, name, _ in admin_endpoints(admin_config) if name}
    for action in ("start", "stop", "restart", "review", "preset", "profile_save", "profile_load", "profile_delete",
                   "log", "download_log", "tick", "attach", "apply_and_relaunch", "roll_back", "weights_download"):
        assert f"admin_{action}" in names, action


@pytest.mark.parametrize("who", ["anonymous", "bob logged in at /", "bob at /admin"])
def test_every_admin_endpoint_refuses_anyone_but_the_admin(app, admin_config, who):
    with ExitStack() as stack:
        c = stack.enter_context(logged_in(app, "", *BOB) if who == "bob logged in at /" else client(app))
        if who == "bob at /admin":
            refused = c.post("/admin/login", data={"username": BOB[0], "password": BOB[1]})
            assert refused.status_code in (400, 401, 403)
        assert c.get("/admin/config").status_code in (401, 403)
        endpoints = admin_endpoints(admin_config)
        assert len(endpoints) >= 25
        for fn_index, api_name, n_inputs in endpoints:
            for url, body in attempts(fn_index, api_name, n_inputs):
                answer = c.post(url, json=body)
                assert answer.status_code in (401, 403), (who, url, answer.status_code, answer.text[:200])
    assert "admin_start" in {name for _, name, _ in endpoints}


def test_the_admin_is_let_through_for_a_harmless_action(app, admin_config):
    log = next(i for i, name, _ in admin_endpoints(admin_config) if name == "admin_log")
    with logged_in(app, "/admin", "admin", ADMIN_PASSWORD) as admin:
        done = run(admin, "/admin", log, ["", False, False])  # filter, problems only, polling
    assert done["success"] is True
    assert isinstance(done["output"]["data"][0], str)


def test_the_main_app_exposes_no_admin_handler(app, admin_config):
    with logged_in(app, "", *BOB) as bob:
        answer = bob.get("/config")
        assert answer.status_code == 200
        main = answer.json()
    main_names = {d.get("api_name") for d in main["dependencies"]}
    admin_names = {name for _, name, _ in admin_endpoints(admin_config)}
    assert not any(str(name).startswith("admin_") for name in main_names)
    browser_only = {name for name in admin_names if name is None or str(name).startswith("js_fn")}  # no handler
    assert not (main_names & (admin_names - browser_only))
    elem_ids = {c.get("props", {}).get("elem_id") for c in main["components"]}
    assert not any(str(e).startswith(("m3-field-", "m3-engine-", "m3-admin-")) for e in elem_ids)
    # the admin's Attach tab (the chat's own attachments are m3-attachments, m3-attach-files, m3-attach-apply)
    assert not elem_ids & {"m3-attach", "m3-attach-url", "m3-attach-key", "m3-attach-outcome"}
