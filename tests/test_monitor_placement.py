"""The Monitor's placement advice: the planner on the monitor's window of dumps, and its panel."""

from __future__ import annotations

import re
import time
import uuid

import numpy as np

from launch.model_config import load_model_shape
from launch.placement import gpu_expert_mask
from launch.placement_plan.predict import Hardware
from launch.placement_plan.prompts import builtin_mix
from launch.presets import single_gpu
from launch.sim.routing import RoutingModel, topic_key
from m3ui.experts.window import ExpertSlice, ExpertWindow
from m3ui.placement.advice import AdviceCache, PlacementAdvice, advise, model_shape_for
from m3ui.ui.monitor.placement_html import placement_panel

M3 = load_model_shape(None)
MASK = gpu_expert_mask(M3, single_gpu().replace(kt_weight_path="/w"))
ONE_GPU = Hardware(1, 96e9, 0.85)


def window_of(conversations: int) -> ExpertWindow:
    window, routing = ExpertWindow(span_s=3600), RoutingModel(M3, MASK)
    for i, prompt in enumerate(builtin_mix()[:conversations]):
        counts = routing.route(topic_key(prompt), 1000, uuid.uuid4().hex).counts
        window.add(ExpertSlice(float(i), float(i + 1), counts, None, 1), MASK)
    return window


def test_the_window_hands_its_slices_to_the_planner_oldest_first():
    window = window_of(3)
    assert len(window.segments()) == 3
    assert np.array_equal(sum(window.segments()), window.counts)


def test_advice_on_the_window_recommends_frequency_at_the_current_setting_and_the_panel_draws_it():
    window = window_of(24)
    advice = advise(window.segments(), window.residency, M3, ONE_GPU)
    assert advice.plan is not None and advice.plan.gpu_experts == 4
    assert advice.sentence.startswith("Relaunch with frequency at 4 GPU experts per layer")
    assert advice.confidence == "high"
    html = placement_panel(advice)
    assert len(re.findall(r'<polyline[^>]*data-strategy="frequency"', html)) == 2  # hit rate and tok/s
    assert html.count("<polyline") == 8 and 'data-mark="vram-ceiling"' in html and 'data-mark="current"' in html
    assert "Relaunch with frequency" in html


def test_without_enough_dumps_or_residency_the_panel_says_why():
    few = window_of(1)
    assert "a few recorder dumps" in advise(few.segments(), few.residency, M3, ONE_GPU).reason
    window = window_of(3)
    assert "which experts sit on the GPU" in advise(window.segments(), None, M3, ONE_GPU).reason
    other = tuple(np.ones((48, 128), dtype=np.int64) for _ in range(3))
    assert "do not fit" in advise(other, MASK, M3, ONE_GPU).reason
    assert "No placement advice yet." in placement_panel(PlacementAdvice(None, "because"))
    assert placement_panel(None) == ""


def test_plans_are_made_in_the_background_once_per_refresh_and_an_answer_without_one_is_retried():
    cache, calls = AdviceCache(refresh_s=60), []
    window = window_of(3)
    planned = advise(window.segments(), window.residency, M3, ONE_GPU)

    def compute() -> PlacementAdvice:
        calls.append(1)
        return PlacementAdvice(None, "not yet") if len(calls) == 1 else planned

    def settled(expected: object) -> None:
        deadline = time.monotonic() + 10
        while cache.get(compute) is not expected:
            assert time.monotonic() < deadline
            time.sleep(0.01)

    assert cache.get(compute) is None  # nothing computed yet: the refresh does not wait
    deadline = time.monotonic() + 10
    while (answer := cache.get(compute)) is None or answer.plan is None:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    settled(planned)
    for _ in range(5):
        assert cache.get(compute) is planned
    assert len(calls) == 2  # the plan is kept for its refresh interval


def test_the_shape_comes_from_the_launched_model_or_the_bundled_one():
    assert model_shape_for(None) == M3
    assert model_shape_for(single_gpu()) == M3  # the placeholder path has no config.json
