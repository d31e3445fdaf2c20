"""The app's monitor end to end: the supervisor launches the simulated engine as the app does, the monitor
follows the engine link (launch, stop, attach), and the panels show what the engine's dumps say.

The tests run in order against one monitor: no engine, launched, chats, per-answer figure, stopped,
attached (no recorder; slow, down and back), attached with a recorder whose dumps are not local.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
import pytest

from launch.command import Engine
from launch.model_config import load_model_shape
from launch.supervisor import Supervisor
from m3ui.engine_link import EngineLink
from m3ui.monitor.sampler import SamplerConfig
from m3ui.monitor.service import MonitorService
from m3ui.placement.advice import advise_snapshot
from m3ui.services import simulated_settings
from m3ui.ui.monitor.engine_html import headline
from m3ui.ui.monitor.experts_html import experts_panel
from m3ui.ui.monitor.format import pct
from m3ui.ui.monitor.placement_html import placement_panel
from tests.fault_proxy import FaultProxy
from tests.monitor_sims import PACED_FAST, RECORDER_PATHS, alive, chat, dump_now, recorder_on, sim_with

M3 = load_model_shape(None)
MOE = list(M3.moe_layer_ids)
# a dump only when asked (start of recording, checkpoints): the tests read each one with torch first
ENGINE_ENV = {**PACED_FAST, "M3UI_SIM_STARTUP_SECONDS": "0.3"}
CONFIG = SamplerConfig(interval_s=0.1, expert_dump_every_s=3600, request_timeout_s=1.0, slow_after_s=0.3)


def _wait_for(condition: Callable[[], bool], timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    saved = {key: os.environ.get(key) for key in ENGINE_ENV}
    os.environ.update(ENGINE_ENV)  # the supervisor starts the sim with this environment
    supervisor = Supervisor(tmp_path_factory.mktemp("data") / "runs")
    link = EngineLink(supervisor)
    monitor = MonitorService(link, CONFIG, follow_every_s=0.1)
    monitor.start()
    try:
        yield link, monitor
    finally:
        monitor.stop()
        supervisor.close()
        for key, value in saved.items():
            os.environ.pop(key) if value is None else os.environ.__setitem__(key, value)


@contextmanager
def _attached(link: EngineLink, url: str) -> Iterator[None]:
    link.attach(url, None)
    try:
        yield
    finally:
        link.stop()


def _view(monitor: MonitorService, link: EngineLink) -> str:
    snapshot = monitor.sampler.latest()
    return headline(snapshot, link.status()) + experts_panel(snapshot.experts)


def test_without_an_engine_the_monitor_watches_nothing_and_says_so(app):
    link, monitor = app
    _wait_for(lambda: monitor.sampler.latest().engine.state == "not_configured")
    assert "No engine" in _view(monitor, link)


@pytest.fixture(scope="module")
def launched(app):
    link, monitor = app
    plan = link.launch(simulated_settings(), Engine("sim"))
    assert plan.ok, plan.findings
    assert link.supervisor.wait_ready(60)
    _wait_for(lambda: monitor.sampler.latest().experts.status == "recording")
    return link.status().url, link.recorder_dir()


def test_the_monitor_follows_the_engine_the_supervisor_launches(app, launched):
    link, monitor = app
    snapshot = monitor.sampler.latest()
    assert snapshot.engine.state == "ok" and snapshot.engine.info.recorder_mode == "stat"
    _wait_for(lambda: link.supervisor.snapshot(0).pid in monitor.sampler.latest().cpu.engine.pids)
    assert "Serving" in _view(monitor, link)


def test_after_a_few_chats_the_panel_shows_the_counts_the_placement_and_the_dumped_hit_rate(app, launched):
    link, monitor = app
    url, folder = launched
    for topic in ("write a poem about the sea", "explain how tides work", "a recipe for bread"):
        chat(url, topic, max_tokens=30)
    truth = dump_now(url, folder)  # what the engine's own dump says, read by torch
    monitor.expert_checkpoint()  # the monitor reads that dump and one more
    experts = monitor.sampler.latest().experts
    assert experts.activations == truth.total_activations > 0
    assert experts.hit_rate.gpu_activations == truth.gpu_activations
    expected = truth.gpu_activations / truth.total_activations
    residency = experts.residency[MOE]
    assert residency[:, :4].all() and not residency[:, 4:].any()  # uniform placement: experts 0..3 on the GPU
    assert np.array_equal(residency, truth.residency[MOE])
    view = _view(monitor, link)
    assert f"GPU hit rate {pct(expected, 1)}" in view and f'data-activations="{truth.total_activations}"' in view


def test_the_placement_panel_plans_on_the_monitors_own_dumps(app, launched):
    link, monitor = app
    url, _ = launched
    for topic in ("write a poem about the sea", "explain how tides work", "a recipe for bread") * 2:
        chat(url, topic, max_tokens=40)
        monitor.expert_checkpoint()  # one dump per conversation: the planner's segments
    snapshot = monitor.sampler.latest()
    advice = advise_snapshot(snapshot.experts, link.settings, snapshot.gpu, link.status().simulated)
    assert advice is not None and advice.plan is not None, advice
    assert advice.plan.gpu_experts == 4  # the launched single-GPU preset's, read from the reported residency
    assert advice.plan.recorded_tokens == snapshot.experts.counts[MOE[0]].sum() // 4
    assert any("short recording fakes skew" in w for w in advice.plan.warnings) and advice.confidence == "low"
    html = placement_panel(advice)
    assert 'data-mark="vram-ceiling"' in html and "GPU hit rate" in html


def test_an_answer_gets_the_hit_rate_of_its_own_expert_activations(app, launched):
    _, monitor = app
    url, folder = launched
    t0 = monitor.expert_checkpoint()
    chat(url, "why is the sky blue", max_tokens=40)
    truth = dump_now(url, folder)
    rate = monitor.answer_gpu_hit_rate(t0, time.time())
    assert rate == truth.gpu_activations / truth.total_activations
    assert monitor.answer_hit_rate(t0, time.time()) == f"GPU hit {rate:.0%}"


def test_when_the_engine_stops_the_monitor_lets_go(app, launched):
    link, monitor = app
    link.stop()
    _wait_for(lambda: monitor.sampler.latest().engine.state == "not_configured")
    _wait_for(lambda: monitor.sampler.latest().experts.status == "no_engine")
    assert monitor.answer_gpu_hit_rate(time.time() - 60, time.time()) is None


def test_an_attached_engine_without_a_recorder_is_watched_and_explained_never_recorded(app, launched):
    link, monitor = app
    state = lambda: monitor.sampler.latest().engine.state  # noqa: E731
    with sim_with() as plain, FaultProxy(plain.url) as proxy, _attached(link, proxy.url):
        _wait_for(lambda: monitor.sampler.latest().experts.status == "disabled")
        assert "--expert-distribution-recorder-mode stat" in _view(monitor, link)
        assert monitor.sampler.latest().cpu.engine.status == "not_configured"  # not our process
        proxy.delay_s["/v1/loads"] = 1.5  # slow: no answer within the monitor's timeout
        _wait_for(lambda: state() == "slow")
        assert "Slow" in _view(monitor, link)
        proxy.delay_s.clear()
        _wait_for(lambda: state() == "ok")
        port = proxy.port
        proxy.close()
        _wait_for(lambda: state() == "unreachable")
        assert "Unreachable" in _view(monitor, link)
        with FaultProxy(plain.url, port) as back:
            _wait_for(lambda: state() == "ok")
            assert "Serving" in _view(monitor, link)
            time.sleep(0.5)  # more ticks
            assert not {*proxy.paths(), *back.paths()} & set(RECORDER_PATHS)
        assert alive(plain)  # the recorder endpoints would have killed it


def test_an_attached_engine_with_a_recorder_needs_a_local_dump_folder(app, launched, tmp_path):
    link, monitor = app
    with sim_with(tmp_path, **recorder_on()) as recording, FaultProxy(recording.url) as proxy, \
            _attached(link, proxy.url):
        _wait_for(lambda: monitor.sampler.latest().experts.status == "no_local_folder")
        assert "dump folder to be local" in _view(monitor, link)
        assert not set(proxy.paths()) & set(RECORDER_PATHS) and not list(tmp_path.iterdir())
