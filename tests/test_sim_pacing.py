"""The simulated KT hybrid's speed: TTFT grows with the prompt, decode runs at tens of tokens a second and slows
under concurrency, more GPU experts decode faster, and the unthrottled mode never waits."""

from __future__ import annotations

import time

import httpx
import numpy as np

from launch.model_config import load_model_shape
from launch.placement import gpu_expert_mask
from launch.presets import single_gpu, tp8_hybrid
from launch.settings import LaunchSettings
from launch.sim.config import load_sim_config
from launch.sim.pacing import Pacing
from launch.sim.routing import RoutingModel
from tests.sim_process import free_port, sim_settings, start_sim  # noqa: F401  (fixture)

SHAPE = load_model_shape(None)
CONFIG = load_sim_config(1, env={})


def _alone_tps(settings: LaunchSettings) -> float:
    routing = RoutingModel(SHAPE, gpu_expert_mask(SHAPE, settings), seed=1)
    steps = [routing.route(topic, 1).step_time for topic in ("math", "weather", "poetry") for _ in range(30)]
    return 1 / Pacing(CONFIG, None).decode_seconds(float(np.mean(steps)), running=1)


def test_time_to_first_token_grows_with_the_prompt_and_the_gpu_prefill_path_is_faster() -> None:
    cpu = Pacing(CONFIG, gpu_prefill_threshold=None)
    assert cpu.prefill_seconds(4000, 4000) > 10 * cpu.prefill_seconds(50, 50) > 0
    gpu = Pacing(CONFIG, gpu_prefill_threshold=500)
    assert gpu.prefill_seconds(4000, 4000) < cpu.prefill_seconds(4000, 4000) / 3
    assert gpu.prefill_seconds(100, 100) == cpu.prefill_seconds(100, 100)
    assert cpu.prefill_seconds(100, 4000) < cpu.prefill_seconds(4000, 4000)  # cached tokens cost nothing


def test_a_tp1_seed_hybrid_decodes_at_tens_of_tokens_a_second_and_more_gpu_experts_decode_faster() -> None:
    tp1 = _alone_tps(single_gpu())
    assert 18 <= tp1 <= 30
    # 40 of 128 experts per layer still leave most layers waiting for the CPU at every token (launch.decode_speed)
    assert _alone_tps(tp8_hybrid()) > tp1 * 1.12


def test_concurrent_requests_each_slow_down_while_total_throughput_rises() -> None:
    pacing = Pacing(CONFIG, None)
    alone, shared = pacing.decode_seconds(6.0, 1), pacing.decode_seconds(6.0, 4)
    assert shared > 2 * alone and 4 / shared > 1 / alone


def test_the_unthrottled_mode_never_waits_yet_reports_the_simulated_times() -> None:
    fast = Pacing(load_sim_config(1, env={"M3UI_SIM_UNTHROTTLED": "1"}), 500)
    paced = Pacing(CONFIG, 500)
    assert not fast.throttled and paced.throttled
    assert fast.prefill_seconds(100_000, 100_000) == paced.prefill_seconds(100_000, 100_000) > 0
    assert fast.decode_seconds(5.0, 64) == paced.decode_seconds(5.0, 64) > 0


def test_a_real_stream_arrives_at_the_configured_pace(start_sim) -> None:  # noqa: F811
    sim = start_sim(sim_settings(free_port()), env={"M3UI_SIM_UNTHROTTLED": "0", "M3UI_SIM_DECODE_TPS": "40"})
    sim.wait_ready()
    body = {"messages": [{"role": "user", "content": "count to 15"}], "stream": True}
    arrivals = []
    with httpx.stream("POST", f"{sim.url}/v1/chat/completions", json=body, timeout=30) as response:
        for line in response.iter_lines():
            if line.startswith("data: {") and '"content":"' in line:
                arrivals.append(time.monotonic())
    tokens_per_second = (len(arrivals) - 1) / (arrivals[-1] - arrivals[1])
    assert 20 <= tokens_per_second <= 60  # 40 tok/s all-CPU, a little faster with 4 GPU experts per layer
