"""The operator's cockpit in real Chromium, on the real app: log in as admin, pick the single-GPU preset, read
the advice and the preflight, start the simulated engine and watch its phases reach ready, chat at /, stop;
then put too many experts on the GPU, see the OOM diagnosis, apply its fix and relaunch to ready."""

import os
import re
import signal
import time

import pytest
from playwright.sync_api import expect

from launch.run_state import read_run_state
from tests.app_process import running_app
from tests.browser import chromium_page

pytestmark = pytest.mark.browser

ADMIN_PASSWORD = "cockpit-pw"
SCREENSHOTS = "/tmp/m3ui-admin-{}.png"
# Slow enough that the 1 s status timer sees the start-up phases go by, fast enough for CI.
ENV = {"M3UI_SIM_STARTUP_SECONDS": "4"}


def status(page):
    return page.locator("#m3-admin-status .m3a-status-card")


def wait_state(page, state: str, timeout: float = 60) -> set[str]:
    """Wait for the engine state; the phases the status strip showed meanwhile."""
    phases: set[str] = set()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        card = status(page)
        if card.count():
            seen = card.evaluate("c => [c.dataset.engineState, c.dataset.phase]")  # one render, both values
            phases.add(seen[1])
            if seen[0] == state:
                return phases
        time.sleep(0.1)
    outcome = page.locator("#m3-outcome").inner_text()
    raise AssertionError(f"engine not {state}: {card.inner_text() if card.count() else 'no status'}\n{outcome}")


def start_with_too_many_gpu_experts(page) -> str:
    """Stop the engine, then start it anyway with more GPU experts than fit: the simulated engine fails with a CUDA
    out of memory. The count the form held before."""
    page.locator("#m3-engine-stop").click()
    wait_state(page, "stopped", 30)
    experts = page.locator("#m3-field-kt_num_gpu_experts input")
    good = experts.input_value()
    experts.fill("60")
    page.locator("#m3-msg-kt_num_gpu_experts").get_by_text("CUDA out of memory").wait_for()
    page.locator("#m3-engine-start").click()
    page.locator("#m3-outcome").get_by_text("Not started").wait_for()
    page.locator("#m3-engine-start-anyway").click()
    wait_state(page, "failed")
    return good


def log_in(page, url: str) -> None:
    page.goto(url)
    page.locator("input[type=text]").fill("admin")
    page.locator("input[type=password]").fill(ADMIN_PASSWORD)
    page.keyboard.press("Enter")
    status(page).wait_for(timeout=30_000)


def chat_answers(page, url: str, expected: str) -> str:
    """Send a chat message at / and wait for an answer that contains `expected`; the answer's text."""
    page.goto(url)
    box = page.locator("#m3-message textarea")
    box.wait_for(timeout=30_000)
    box.fill("What is 2+2? Answer with the number only.")
    box.press("Enter")
    answer = page.locator("#m3-chatbot [data-testid='bot']").last
    answer.wait_for(timeout=30_000)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        text = answer.inner_text()
        if expected in text and "Waiting for the first token" not in text:
            return text
        time.sleep(0.2)
    return answer.inner_text()


def test_operator_launches_chats_stops_then_fixes_an_oom_in_one_click(tmp_path):
    with running_app(tmp_path, "--admin-password", ADMIN_PASSWORD, env=ENV) as app, \
            chromium_page((1440, 1000)) as page:
        log_in(page, app.url + "/admin/")
        wait_state(page, "ready")  # the app starts the simulated engine by itself

        page.locator("#m3-preset input").click()
        page.get_by_role("option", name="Preset: hybrid, single 96 GB Hopper GPU").click()
        page.locator("#m3-load-preset").click()
        page.locator("#m3-outcome").get_by_text("Loaded into the form").wait_for()
        assert page.locator("#m3-field-kt_num_gpu_experts input").input_value() == "4"
        advice = page.locator("#m3-advice")
        assert "--kt-num-gpu-experts" in advice.inner_text() and "KV pool per GPU" in advice.inner_text()
        assert "Fits:" in page.locator("#m3-whatif-plan").inner_text()
        page.locator("#m3-preflight").click()
        page.locator("#m3-preflight-result").get_by_text("Preflight passed").wait_for()
        page.screenshot(path=SCREENSHOTS.format("launch"), full_page=True)

        page.locator("#m3-engine-stop").click()
        wait_state(page, "stopped", 30)
        page.locator("#m3-engine-start").click()
        phases = wait_state(page, "ready")
        assert {"loading weights", "ready"} <= phases, phases
        page.get_by_role("tab", name="Engine log").click()
        page.locator("#m3-log textarea").wait_for()
        assert "Load weight begin" in page.locator("#m3-log textarea").input_value()
        page.get_by_role("tab", name="Launch").click()

        chat = page.context.new_page()
        assert "4" in chat_answers(chat, app.url + "/", "4")
        chat.close()

        start_with_too_many_gpu_experts(page)
        experts = page.locator("#m3-field-kt_num_gpu_experts input")
        diagnosis = page.locator("#m3-diagnosis")
        diagnosis.wait_for(timeout=10_000)
        assert "CUDA out of memory while loading" in diagnosis.inner_text()
        assert "torch.OutOfMemoryError" in diagnosis.inner_text()  # the evidence line
        page.screenshot(path=SCREENSHOTS.format("diagnosis"))
        suggested = page.locator("#m3-diag-changes label").first.inner_text()
        assert suggested.startswith("--kt-num-gpu-experts")
        page.locator("#m3-diag-apply").click()
        wait_state(page, "ready")
        assert experts.input_value() == suggested.split()[-1]
        expect(diagnosis).to_be_hidden(timeout=10_000)


def test_a_failed_start_a_killed_engine_auto_restart_and_the_quiet_log_as_the_operator_sees_them(tmp_path):
    """Issue 10 #4/#6 and issue 9 #9 in the browser: after a failed start the outcome says so (not "Starting…
    follow the phases"), the advice speaks the operator's language, the log hides m3ui's polling unless asked,
    and with auto-restart on a SIGKILLed engine comes back by itself while the status counts the attempts."""
    with running_app(tmp_path, "--admin-password", ADMIN_PASSWORD, env={"M3UI_SIM_STARTUP_SECONDS": "1"}) as app, \
            chromium_page((1440, 1000)) as page:
        log_in(page, app.url + "/admin/")
        wait_state(page, "ready")
        outcome = page.locator("#m3-outcome")

        advice = page.locator("#m3-advice").inner_text()
        assert "reference deployments" in advice and "seed" not in advice

        good = start_with_too_many_gpu_experts(page)
        experts = page.locator("#m3-field-kt_num_gpu_experts input")
        outcome.get_by_text("The start failed: CUDA out of memory while loading the model").wait_for(timeout=10_000)
        assert "follow the phases" not in outcome.inner_text()

        page.get_by_role("tab", name="Profiles").click()
        page.locator("#m3-restart-enabled input").check()
        page.locator("#m3-restart-attempts input").fill("2")
        page.locator("#m3-restart-window input").fill("10")
        page.locator("#m3-restart-delay input").fill("2")
        page.locator("#m3-restart-apply").click()
        page.locator("#m3-profile-outcome").get_by_text("Auto-restart is on: up to 2 attempt(s)").wait_for()

        page.get_by_role("tab", name="Launch").click()
        experts.fill(good)
        page.locator("#m3-engine-start").click()
        wait_state(page, "ready")

        page.get_by_role("tab", name="Engine log").click()
        log = page.locator("#m3-log textarea")
        expect(log).to_have_value(re.compile("Load weight begin"))
        assert '"GET /v1/loads' not in log.input_value() and '"GET /health' not in log.input_value()
        page.locator("#m3-log-polling input").check()
        expect(log).to_have_value(re.compile('"GET /v1/loads HTTP'), timeout=10_000)
        page.locator("#m3-log-polling input").uncheck()
        expect(log).not_to_have_value(re.compile('"GET /(health|v1/loads) HTTP'), timeout=10_000)

        engine = read_run_state(app.data_dir)
        os.kill(engine.pid, signal.SIGKILL)
        attempt = page.locator('#m3-admin-status .m3a-auto-restart[data-attempt="1"]')
        attempt.wait_for(timeout=15_000)
        assert "of 2" in attempt.inner_text()
        outcome.get_by_text("The engine died: The engine was killed by SIGKILL").wait_for(timeout=10_000)
        page.screenshot(path=SCREENSHOTS.format("auto-restart"))
        wait_state(page, "ready")
        assert read_run_state(app.data_dir).pid != engine.pid
