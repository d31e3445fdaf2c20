"""The admin's Fleet tab on the real app running a fleet (`python app.py --fleet FILE`: the real sglang-router in
front of a simulated worker), one app for the module: a chat user or an anonymous client can neither see the
fleet nor launch, attach or remove a worker through any of Gradio's routes (raw HTTP); the admin, in real
Chromium, sees the router and the worker, gets a clear refusal for a bad URL, launches a second worker, sees it
join the router, and removes it again (its engine stopped)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest

from launch.run_state import read_run_state
from tests.app_process import RunningApp, running_app
from tests.browser import chromium_page
from tests.fleet_checks import healthy_workers, until
from tests.fleet_process import write_fleet_file
from tests.web_requests import client, config, dependency, run

pytest.importorskip("sglang_router")

ADMIN_PASSWORD = "fleet-admin-pw-1"
BOB = ("bob", "bob-password")
ACTIONS = {"admin_fleet_launch", "admin_fleet_attach", "admin_fleet_remove"}


@pytest.fixture(scope="module")
def fleet_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningApp, str, str]]:
    """The app, its router's URL and its one worker's URL, once the router lists the worker healthy."""
    tmp = tmp_path_factory.mktemp("fleet-admin")
    path, router = write_fleet_file(tmp, workers=1, policy="cache_aware")
    (worker,) = (f"http://127.0.0.1:{w['port']}" for w in json.loads(path.read_text())["workers"])
    with running_app(tmp, "--fleet", str(path), "--admin-password", ADMIN_PASSWORD, "--chat-user", ":".join(BOB),
                     timeout=120) as app:
        until(lambda: healthy_workers(router) == {worker}, 120, "the app's fleet ready")
        yield app, router, worker


def worker_dirs(app: RunningApp) -> list[Path]:
    return sorted((app.data_dir / "fleets").glob("*/worker-*"))


def test_only_the_admin_can_see_or_change_the_fleet(fleet_app: tuple[RunningApp, str, str]) -> None:
    app, router, worker = fleet_app
    with client(app) as admin:
        assert admin.post("/admin/login", data={"username": "admin", "password": ADMIN_PASSWORD}).status_code == 200
        cfg = config(admin, "/admin")
        shown = run(admin, "/admin", dependency(cfg, "admin_fleet_log")["id"], ["router"])
        assert shown["success"] and "Starting router" in shown["output"]["data"][0]  # the admin gets through
    calls = {d["api_name"]: (d["id"], len(d["inputs"])) for d in cfg["dependencies"]
             if str(d.get("api_name")).startswith("admin_fleet_")}
    assert set(calls) > ACTIONS  # and the refresh and the log, which show URLs and logs
    before = worker_dirs(app)
    for who in ("anonymous", "bob"):
        with client(app) as c:
            if who == "bob":
                assert c.post("/login", data={"username": BOB[0], "password": BOB[1]}).status_code == 200
            for name, (fn_index, n_inputs) in calls.items():
                # What the page would send to remove the worker, attach one, or launch one on a free port.
                data = [worker if name.endswith("remove") else router if name.endswith("attach") else ""] + \
                    [None] * (n_inputs - 1)
                for url, body in (("/admin/gradio_api/queue/join", {"data": data, "fn_index": fn_index,
                                                                      "session_hash": f"{who}-{name}"}),
                                  *((f"/admin/gradio_api/{route}/{name}", {"data": data})
                                    for route in ("call", "run", "api"))):
                    answer = c.post(url, json=body)
                    assert answer.status_code in (401, 403), (who, url, answer.status_code, answer.text[:200])
    time.sleep(1.0)  # anything that slipped through would have reached the router by now
    assert healthy_workers(router) == {worker}
    assert worker_dirs(app) == before


@pytest.mark.browser
def test_the_admin_adds_and_removes_a_worker_in_the_browser(fleet_app: tuple[RunningApp, str, str]) -> None:
    app, router, worker = fleet_app
    with chromium_page((1280, 900)) as page:
        page.goto(app.url + "/admin/")
        page.locator("input[type=text]").fill("admin")
        page.locator("input[type=password]").fill(ADMIN_PASSWORD)
        page.keyboard.press("Enter")
        page.wait_for_selector("#m3-admin-status .m3a-status-card", timeout=60_000)
        page.get_by_role("tab", name="Fleet").click()
        page.wait_for_selector('#m3-fleet-router [data-fleet-state="ready"][data-router-healthy="true"]',
                               timeout=30_000)
        first = page.locator(f'#m3-fleet-workers tr[data-url="{worker}"]')
        first.wait_for(timeout=30_000)
        assert (first.get_attribute("data-where"), first.get_attribute("data-healthy")) == ("launched", "true")
        assert page.locator("#m3-fleet-workers tbody tr").count() == 1

        page.fill("#m3-fleet-url textarea", "gpu-b:30000")
        page.click("#m3-fleet-attach")
        page.locator("#m3-fleet-outcome").get_by_text("is not an http(s)://HOST:PORT address").wait_for()

        page.click("#m3-fleet-launch")
        page.locator("#m3-fleet-outcome").get_by_text("Launching a worker on").wait_for()
        added = page.locator("#m3-fleet-workers tbody tr").nth(1)
        added.wait_for(timeout=30_000)
        url = added.get_attribute("data-url")
        assert url and url != worker
        page.wait_for_selector(f'#m3-fleet-workers tr[data-url="{url}"][data-healthy="true"]', timeout=60_000)
        until(lambda: healthy_workers(router) == {worker, url}, 30, "the router lists the launched worker")
        state = read_run_state(worker_dirs(app)[-1])
        assert state is not None and state.settings.port == int(url.rsplit(":", 1)[1])
        engine = psutil.Process(state.pid)

        page.locator("#m3-fleet-chosen input").click()
        page.get_by_role("option", name=url, exact=True).click()
        page.wait_for_function("document.querySelector('#m3-fleet-log textarea').value.includes('ready to roll')")
        page.click("#m3-fleet-remove")
        page.locator("#m3-fleet-outcome").get_by_text(f"Removed {url} from the router and stopped it.").wait_for()
        page.wait_for_selector(f'#m3-fleet-workers tr[data-url="{url}"]', state="detached", timeout=30_000)
        until(lambda: healthy_workers(router) == {worker}, 30, "the router drops the removed worker")
        psutil.wait_procs([engine], timeout=15)
        assert not engine.is_running() or engine.status() == psutil.STATUS_ZOMBIE
        assert httpx.get(f"{worker}/health", timeout=5, trust_env=False).status_code == 200
