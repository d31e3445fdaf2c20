"""The admin weights desk against a stand-in Hub on 127.0.0.1: config.json first (the form's model path then
points at it), a size and disk check, one background download with progress, cancel and resume, and clear
messages when the Hub cannot be asked."""

import time
from pathlib import Path

import pytest
from huggingface_hub import constants as hf_constants

from launch.model_config import load_model_shape
from launch.preflight import free_port
from m3ui.admin.weights import WeightsDesk, WeightsForm
from tests.hub_standin import REPO_ID, StandInHub


@pytest.fixture
def hub(monkeypatch):
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
    with StandInHub() as standin:
        yield standin


def form(hub: StandInHub, dest: Path) -> WeightsForm:
    return WeightsForm(REPO_ID, str(dest), endpoint=hub.endpoint)


def wait_finished(desk: WeightsDesk, timeout: float = 30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        progress = desk.progress()
        if progress is not None and progress.finished:
            return progress
        time.sleep(0.05)
    raise AssertionError(f"download not finished: {desk.progress()}")


def test_config_json_alone_comes_first_and_gives_the_model_shape(hub, tmp_path):
    outcome, folder = WeightsDesk().fetch_config(form(hub, tmp_path / "m3"))
    assert outcome.ok and folder == tmp_path / "m3"
    assert load_model_shape(folder).num_routed_experts == 128
    assert [r.path.rsplit("/", 1)[-1] for r in hub.requests if "/resolve/" in r.path and r.method == "GET"] == \
        ["config.json"]


def test_the_plan_tells_the_size_and_the_download_completes_with_progress(hub, tmp_path):
    desk = WeightsDesk()
    outcome, plan = desk.plan(form(hub, tmp_path / "m3"))
    assert outcome.ok and plan.total_bytes == hub.total_bytes and "to download" in outcome.message
    assert desk.start(form(hub, tmp_path / "m3")).ok
    done = wait_finished(desk)
    assert done.state == "done" and done.bytes_done == done.bytes_total == hub.total_bytes
    assert done.files_done == done.files_total == len(hub.files)
    assert desk.verify(str(tmp_path / "m3")).ok


def test_cancel_keeps_the_bytes_and_a_second_download_resumes(hub, tmp_path):
    desk = WeightsDesk()
    hub.knobs.throttle_bps = 400_000
    assert desk.start(form(hub, tmp_path / "m3")).ok
    assert desk.start(form(hub, tmp_path / "m3")).level == "error"  # one download at a time
    deadline = time.monotonic() + 20
    while desk.progress().bytes_done < 200_000 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert desk.cancel().ok
    cancelled = wait_finished(desk)
    assert cancelled.state == "cancelled" and cancelled.bytes_done > 0
    assert desk.verify(str(tmp_path / "m3")).level == "warning"  # incomplete, said so
    hub.knobs.throttle_bps = None
    assert desk.start(form(hub, tmp_path / "m3")).ok
    assert wait_finished(desk).state == "done"
    served = sum(hub.bytes_served(name) for name in hub.files)
    assert served < hub.total_bytes + cancelled.bytes_done  # resumed, not started over


def test_an_unreachable_hub_and_offline_mode_are_clear_messages(tmp_path, monkeypatch):
    dead = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
    outcome, folder = WeightsDesk().fetch_config(WeightsForm(REPO_ID, str(tmp_path / "m3"), endpoint=dead))
    assert folder is None and outcome.level == "error" and "cannot reach the Hub" in outcome.message
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", True)
    outcome, _ = WeightsDesk().plan(WeightsForm(REPO_ID, str(tmp_path / "m3"), endpoint=dead))
    assert outcome.level == "error" and "HF_HUB_OFFLINE" in outcome.message
    assert not (tmp_path / "m3").exists()


@pytest.mark.parametrize("repo, dest", [("", "/tmp/x"), ("no-slash", "/tmp/x"), (REPO_ID, " ")])
def test_missing_repo_or_folder_is_refused_before_any_request(repo, dest):
    desk = WeightsDesk()
    assert desk.start(WeightsForm(repo, dest)).level == "error"
    assert desk.progress() is None
