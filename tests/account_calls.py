"""Signing in and calling the Account tab's handlers over raw HTTP, for the tests of logins and sessions."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from m3ui.accounts import AccountStore
from tests.app_process import RunningApp
from tests.web_requests import completed, config, run

SIGNED_IN = 200  # a script's login (gradio_client's answer); a browser's form (Accept: text/html) gets a 303


def from_address(app: RunningApp, address: str) -> httpx.Client:
    """A client whose connections come from `address` (any 127.x address reaches the app on loopback)."""
    return httpx.Client(base_url=app.url, trust_env=False, timeout=30,
                        transport=httpx.HTTPTransport(local_address=address))


@contextmanager
def signed_in(app: RunningApp, address: str, user: str, password: str, mount: str = "") -> Iterator[httpx.Client]:
    with from_address(app, address) as c:
        answer = c.post(f"{mount}/login", data={"username": user, "password": password})
        assert answer.status_code == SIGNED_IN, (answer.status_code, answer.text[:200])
        yield c


def still_signed_in(c: httpx.Client, mount: str = "") -> bool:
    status = c.get(f"{mount}/gradio_api/login_check").status_code
    assert status in (200, 401), status
    return status == 200


def clicked_fn(cfg: dict, elem_id: str) -> int:
    """The handler a click on the button `elem_id` runs."""
    (button,) = [c["id"] for c in cfg["components"] if c.get("props", {}).get("elem_id") == elem_id]
    (fn,) = [d["id"] for d in cfg["dependencies"] if [button, "click"] in d["targets"] and d["backend_fn"]]
    return fn


def change_password(c: httpx.Client, current: str, new: str, again: str | None = None) -> dict:
    """The Account tab's "Change password": Gradio's process_completed event."""
    fn = clicked_fn(config(c, ""), "m3-account-change-password")
    return run(c, "", fn, [current, new, new if again is None else again])


def refusal(event: dict) -> str | None:
    """The message of a refused call (None when it succeeded)."""
    return None if event.get("success") else (event.get("output") or {}).get("error")


def admin_reset(c: httpx.Client, name: str, password: str) -> dict:
    """The admin Users tab's "Reset password" for `name`, after listing the accounts in the same page session
    (which puts `name` among the account choices)."""
    cfg = config(c, "/admin")
    fns = {d["api_name"]: d["id"] for d in cfg["dependencies"] if d.get("api_name")}
    session = uuid.uuid4().hex
    for fn, data in ((fns["admin_users_list"], []), (fns["admin_users_password"], [name, password])):
        answer = c.post("/admin/gradio_api/queue/join", json={"data": data, "fn_index": fn, "session_hash": session})
        assert answer.status_code == 200, (answer.status_code, answer.text[:300])
        event = completed(c, "/admin", session)
    return event


def data_with_accounts(folder: Path, *accounts: tuple[str, str]) -> Path:
    """A data folder whose database holds these (name, password) accounts, role user."""
    store = AccountStore.open(folder / "data")
    for name, password in accounts:
        store.add(name, password)
    store.close()
    return folder / "data"


def settled(ledger, user: str, requests: int, within_s: float = 20.0):
    """The person's day once `requests` of theirs are settled: a request settles just after its last byte went out,
    and a cancelled early request in a thread of its own, once the engine has reported what it used."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        days = ledger.days(user)
        if days and days[0].requests >= requests:
            return days[0]
        time.sleep(0.05)
    raise AssertionError(f"{user}'s {requests} requests were not settled within {within_s} s: {ledger.days(user)}")
