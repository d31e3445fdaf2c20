"""A fleet of simulated workers as people see it, in real Chromium against `python app.py --fleet FILE` (the real
sglang-router in front of one simulated worker, no expert recorder): the chat header, the admin's status and its
Fleet tab all say SIMULATED; the engine buttons, which act on one engine, are off and say so, and Remove waits for a
worker to be picked; the Monitor says in one short note that the workers record no experts."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from tests.app_process import RunningApp, running_app
from tests.browser import chromium_page
from tests.fleet_checks import healthy_workers, until
from tests.fleet_process import free_block
from tests.test_browser_chat import wait_engine_ready

pytest.importorskip("sglang_router")
pytestmark = pytest.mark.browser
ADMIN_PASSWORD = "fleet-look-pw-1"
UI_TIMEOUT_MS = 60_000


@pytest.fixture(scope="module")
def fleet_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningApp]:
    """The app on a fleet like the Fleet tab's own example: `"engine": "sim"`, one worker, no recorder."""
    tmp = tmp_path_factory.mktemp("fleet-look")
    router_port, worker_port = free_block(2), free_block(1)
    path = tmp / "fleet.json"
    path.write_text(json.dumps({"engine": "sim", "router": {"port": router_port},
                                "base": {"preset": "single-gpu", "set": {"host": "127.0.0.1"}},
                                "workers": [{"port": worker_port}]}))
    with running_app(tmp, "--fleet", str(path), "--admin-password", ADMIN_PASSWORD, timeout=120) as app:
        until(lambda: healthy_workers(f"http://127.0.0.1:{router_port}") == {f"http://127.0.0.1:{worker_port}"},
              120, "the app's fleet ready")
        yield app


def admin_page(page, app: RunningApp) -> None:
    page.goto(app.url + "/admin/")
    page.locator("input[type=text]").fill("admin")
    page.locator("input[type=password]").fill(ADMIN_PASSWORD)
    page.keyboard.press("Enter")
    page.wait_for_selector("#m3-admin-status .m3a-status-card")


def test_a_simulated_fleet_says_simulated_in_the_chat_header_the_admin_and_the_fleet_tab(fleet_app) -> None:
    with chromium_page((1440, 900)) as page:
        page.set_default_timeout(UI_TIMEOUT_MS)
        page.goto(fleet_app.url)
        wait_engine_ready(page)
        header = page.locator("#m3-header")
        expect(header).to_contain_text("Fleet router ready")
        expect(header.locator(".m3-badge-sim")).to_have_text("SIMULATED ENGINE")

        admin_page(page, fleet_app)
        expect(page.locator("#m3-admin-status .m3-badge-sim")).to_have_text("SIMULATED")
        page.get_by_role("tab", name="Fleet").click()
        router = page.locator('#m3-fleet-router [data-fleet-state="ready"]')
        expect(router.locator(".m3-badge-sim")).to_have_text("SIMULATED")


def test_on_a_fleet_the_engine_buttons_say_they_are_off_and_remove_waits_for_a_worker(fleet_app) -> None:
    with chromium_page((1440, 900)) as page:
        page.set_default_timeout(UI_TIMEOUT_MS)
        admin_page(page, fleet_app)
        for name in ("start", "stop", "restart"):
            expect(page.locator(f"#m3-engine-{name}")).to_be_disabled()
        expect(page.locator("#m3-engine-acts-on")).to_contain_text("Fleet tab")

        page.get_by_role("tab", name="Fleet").click()
        worker = page.locator("#m3-fleet-workers tbody tr").first
        worker.wait_for()
        url = worker.get_attribute("data-url")
        remove = page.locator("#m3-fleet-remove")
        expect(page.locator("#m3-fleet-chosen input")).to_have_value("router")  # the router's log, to read
        expect(remove).to_be_disabled()  # but nothing to remove
        page.locator("#m3-fleet-chosen input").click()
        page.get_by_role("option", name=url, exact=True).click()
        expect(remove).to_be_enabled()
        page.locator("#m3-fleet-chosen input").click()
        page.get_by_role("option", name="router", exact=True).click()
        expect(remove).to_be_disabled()


def test_the_monitor_of_a_fleet_without_the_recorder_says_so_in_one_short_note(fleet_app) -> None:
    with chromium_page((1440, 900)) as page:
        page.set_default_timeout(UI_TIMEOUT_MS)
        page.goto(fleet_app.url)
        page.get_by_role("tab", name="Monitor").click()
        experts = page.locator("#m3-mon-experts")
        off = experts.locator(".m3-note").filter(has_text="The expert recorder is off.")
        expect(off).to_have_count(1)  # once for the fleet, not a paragraph per worker
        expect(off).to_contain_text("The workers run without it")
        shown = experts.inner_text()
        assert len(shown) < 200 and "--" not in shown, shown  # the flags that turn it on are folded away
        off.get_by_text("How to turn it on").click()
        expect(off).to_contain_text("--expert-distribution-recorder-mode")
        expect(page.locator("#m3-mon-headline .m3-kpi-gpu")).to_contain_text("expert recorder off")
        expect(page.locator("#m3-mon-engine")).to_contain_text(re.compile(r"Expert recorder\s*off"))
        expect(page.locator("#m3-mon-cpu")).to_contain_text("A fleet: each worker's figures are in the table")
