"""Raw HTTP against a running app.py (tests/app_process.py), for the tests of the HTTP guards (m3ui/web/):
forged Host and Origin headers, the admin token cookie, and Gradio calls driven by hand."""

from __future__ import annotations

import json
import uuid
from urllib.parse import urlsplit

import httpx

from tests.app_process import RunningApp


def client(app: RunningApp, **kwargs: object) -> httpx.Client:
    return httpx.Client(base_url=app.url, trust_env=False, timeout=30, **kwargs)  # type: ignore[arg-type]


def port_of(app: RunningApp) -> int:
    return int(urlsplit(app.url).port or 80)


def admin_cookie(app: RunningApp) -> dict[str, str]:
    """The cookie the printed admin URL's token is traded for (the Cookie header to send with admin calls)."""
    with client(app) as c:
        answer = c.get(app.admin_url)
    assert answer.status_code == 303, (answer.status_code, answer.text[:300])
    (name, value), = answer.cookies.items()
    return {"Cookie": f"{name}={value}"}


def config(c: httpx.Client, mount: str, headers: dict[str, str] | None = None) -> dict:
    answer = c.get(f"{mount}/config", headers=headers)
    assert answer.status_code == 200, (answer.status_code, answer.text[:300])
    return answer.json()


def dependency(cfg: dict, api_name: str) -> dict:
    return next(d for d in cfg["dependencies"] if d.get("api_name") == api_name)


def form_values(cfg: dict, dep: dict) -> list:
    """What the page would send for a dependency's inputs: each component's current value."""
    components = {c["id"]: c for c in cfg["components"]}
    defaults = {"textbox": "", "code": "", "checkbox": False, "checkboxgroup": []}
    values = []
    for input_id in dep["inputs"]:
        component = components[input_id]
        value = component.get("props", {}).get("value")
        values.append(defaults.get(component["type"]) if value is None else value)
    return values


def join(c: httpx.Client, mount: str, fn_index: int, data: list, headers: dict[str, str] | None = None
         ) -> tuple[httpx.Response, str]:
    session = uuid.uuid4().hex
    answer = c.post(f"{mount}/gradio_api/queue/join", headers=headers,
                    json={"data": data, "fn_index": fn_index, "session_hash": session})
    return answer, session


def completed(c: httpx.Client, mount: str, session: str, headers: dict[str, str] | None = None) -> dict:
    """The process_completed event of a joined call."""
    with c.stream("GET", f"{mount}/gradio_api/queue/data", params={"session_hash": session},
                  headers=headers) as events:
        for line in events.iter_lines():
            if line.startswith("data:"):
                message = json.loads(line[5:])
                if message.get("msg") == "process_completed":
                    return message
    raise AssertionError("no process_completed event")


def run(c: httpx.Client, mount: str, fn_index: int, data: list, headers: dict[str, str] | None = None) -> dict:
    answer, session = join(c, mount, fn_index, data, headers)
    assert answer.status_code == 200, (answer.status_code, answer.text[:300])
    return completed(c, mount, session, headers)
