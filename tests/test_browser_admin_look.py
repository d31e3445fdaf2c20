"""The admin panel as a new operator finds it, in real Chromium against `python app.py` on the simulated engine:
an out-of-memory failure says that the GPU is simulated too; the checks flag a --kt-cpuinfer this machine cannot
give, as the Monitor does."""

from __future__ import annotations

import psutil
import pytest
from playwright.sync_api import expect

from tests.app_process import running_app
from tests.browser import chromium_page
from tests.test_browser_admin import log_in, start_with_too_many_gpu_experts, wait_state

pytestmark = pytest.mark.browser
ADMIN_PASSWORD = "cockpit-pw"
UI_TIMEOUT_MS = 60_000


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with running_app(tmp_path_factory.mktemp("admin-look"), "--admin-password", ADMIN_PASSWORD,
                     env={"M3UI_SIM_STARTUP_SECONDS": "1"}) as app:
        yield app


@pytest.fixture
def admin(app):
    with chromium_page((1440, 900)) as page:
        page.set_default_timeout(UI_TIMEOUT_MS)
        log_in(page, app.url + "/admin/")
        wait_state(page, "ready")
        yield page


def test_a_simulated_out_of_memory_says_the_gpu_is_simulated_too(admin) -> None:
    page = admin
    good = start_with_too_many_gpu_experts(page)
    diagnosis = page.locator("#m3-diagnosis")
    expect(diagnosis).to_contain_text("CUDA out of memory while loading")
    expect(diagnosis.locator(".m3a-diag-sim")).to_contain_text("The GPU is simulated too")

    page.locator("#m3-field-kt_num_gpu_experts input").fill(good)
    page.locator("#m3-engine-start").click()
    wait_state(page, "ready")


def test_the_checks_flag_more_cpu_threads_than_this_machine_has_as_the_monitor_does(admin, app) -> None:
    page = admin
    too_many = (psutil.cpu_count(logical=True) or 1) * 2 + 2
    page.locator("#m3-field-kt_cpuinfer input").fill(str(too_many))
    message = page.locator("#m3-msg-kt_cpuinfer")
    expect(message).to_contain_text(f"--kt-cpuinfer {too_many} exceeds the")
    expect(message).to_contain_text("share CPUs")
    page.locator("#m3-engine-restart").click()  # a warning, not an error: the simulated engine starts anyway
    wait_state(page, "ready")

    monitor = page.context.new_page()
    monitor.goto(app.url)
    monitor.get_by_role("tab", name="Monitor").click()
    expect(monitor.locator("#m3-mon-cpu")).to_contain_text("workers share CPUs", timeout=30_000)
    monitor.close()


def test_start_stop_and_restart_are_enabled_only_when_they_can_act_and_say_what_they_act_on(admin) -> None:
    page = admin
    start, stop, restart = (page.locator(f"#m3-engine-{name}") for name in ("start", "stop", "restart"))
    acts_on = page.locator("#m3-engine-acts-on")
    expect(start).to_be_disabled()  # an engine runs: Start has nothing to do, Restart does
    expect(stop).to_be_enabled()
    expect(restart).to_be_enabled()
    expect(acts_on).to_contain_text("They act on the simulated engine at http://127.0.0.1:")

    stop.click()
    wait_state(page, "stopped", 30)
    expect(start).to_be_enabled()
    expect(stop).to_be_disabled()
    expect(restart).to_be_disabled()
    expect(acts_on).to_contain_text("No engine runs: Start launches the settings below.")

    start.click()
    wait_state(page, "ready")
    expect(start).to_be_disabled()
    expect(stop).to_be_enabled()
