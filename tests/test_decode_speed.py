"""The speed model (launch/decode_speed.py) with the simulated routing reproduces the published shape of
frequency placement's decode gains over uniform, and the wheel facts the placement loop relies on hold."""

from __future__ import annotations

import numpy as np
import pytest

from launch.decode_speed import ALL_CPU_STEP, decode_tps, layer_miss_shares, relative_step_time
from launch.model_config import load_model_shape
from launch.placement import frequency_masks, uniform_masks
from launch.sim.routing import RoutingModel
from tests.sim_process import free_port, sim_settings, start_sim  # noqa: F401  (fixture)
from tests.wheel_cache import fetch_wheel, unpack

M3 = load_model_shape(None)
MOE = list(M3.moe_layer_ids)
ROUTING = RoutingModel(M3, np.ones((60, 128), dtype=bool))
# KTransformers' expert-scheduling tutorial (Qwen3-Next-80B-A3B-FP8, TP4, ShareGPT), as cited in issue 13.
PUBLISHED_FREQUENCY_GAIN = {0.1: 0.036, 0.5: 0.168, 0.9: 0.322}


def expected_traffic(topics: range, requests: str) -> np.ndarray:
    """[layers, experts] expected activations of a mix: four requests on each topic."""
    traffic = np.zeros((60, 128))
    traffic[MOE] = np.mean([ROUTING.popularity(f"topic {t}", f"{requests}{r}") for t in topics for r in range(4)], 0)
    return traffic


def step(traffic: np.ndarray, mask: np.ndarray) -> float:
    return relative_step_time(layer_miss_shares(traffic[MOE], mask[MOE]), M3.experts_per_token)


def frequency_gain(share: float, recorded: np.ndarray, served: np.ndarray) -> float:
    total = round(share * 128) * 57
    by_frequency = frequency_masks(recorded.astype(np.float32), total)
    return step(served, uniform_masks(M3, total)) / step(served, by_frequency) - 1


def test_frequency_gains_follow_the_published_shape_and_vanish_at_the_ends():
    recorded, replayed = expected_traffic(range(8), "a"), expected_traffic(range(8), "b")
    for share, published in PUBLISHED_FREQUENCY_GAIN.items():
        assert frequency_gain(share, recorded, replayed) == pytest.approx(published, abs=0.03), share
    assert abs(frequency_gain(0.0, recorded, replayed)) < 0.02
    assert abs(frequency_gain(1.0, recorded, replayed)) < 0.02


def test_a_placement_from_one_topic_mix_keeps_about_half_its_gain_on_another():
    recorded = expected_traffic(range(8), "a")
    same = frequency_gain(0.5, recorded, expected_traffic(range(8), "b"))
    other = frequency_gain(0.5, recorded, expected_traffic(range(8, 16), "b"))
    assert 0.3 * same < other < 0.7 * same


def test_the_step_is_one_on_the_gpu_and_all_cpu_is_the_slowest():
    assert relative_step_time(np.zeros(57), 4) == 1.0
    assert relative_step_time(np.ones(57), 4) == pytest.approx(ALL_CPU_STEP)
    assert decode_tps(22.0, np.ones(57), 4) == pytest.approx(22.0)
    with pytest.raises(ValueError):
        decode_tps(0.0, np.ones(57), 4)


def test_dynamic_expert_update_is_refused_by_the_simulated_engine_with_the_reason(start_sim):  # noqa: F811
    sim = start_sim(sim_settings(free_port(), kt_enable_dynamic_expert_update=True))
    assert sim.wait_exit() == 1
    assert "--kt-enable-dynamic-expert-update is not simulated" in sim.output
    assert "copy_experts_weights_int4" in sim.output


def test_with_kt_the_simulated_engine_turns_shared_experts_fusion_off_as_sglang_does(start_sim):  # noqa: F811
    sim = start_sim(sim_settings(free_port()))
    sim.wait_ready()
    assert "--disable-shared-experts-fusion is automatically set" in sim.output


@pytest.mark.wheel
def test_the_wheel_facts_behind_the_refusal_and_the_recorder_counts():
    root = unpack(fetch_wheel("sglang-kt", "0.7.2"), "sglang/srt/layers/moe/kt_ep_wrapper.py",
                  "sglang/srt/server_args.py")
    wrapper = (root / "sglang/srt/layers/moe/kt_ep_wrapper.py").read_text(encoding="utf-8")
    update = wrapper[wrapper.index("def _update_gpu_experts_from_batch"):]
    update = update[: update.index("# Step 3")]
    # The update picks the copy by fp8 / fp8-channel / bf16 flags, INT4 otherwise; M3's MXFP8 sets none of them.
    assert "copy_experts_weights_int4" in update.split("else:")[-1]
    assert "_is_mxfp8_quant" not in update
    mxfp8 = wrapper[wrapper.index("# M3 MXFP8 block"):]
    assert mxfp8[: mxfp8.index("return")].count("= True") == 1 and "self.is_mxfp8_quant = True" in mxfp8
    # With KT, shared-experts fusion is forced off, so the recorder's counts are right for M3 under KT.
    server_args = (root / "sglang/srt/server_args.py").read_text(encoding="utf-8")
    assert "if self.kt_weight_path is not None and not self.disable_shared_experts_fusion:\n" \
           "            self.disable_shared_experts_fusion = True" in server_args
