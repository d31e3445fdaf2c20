"""The simulated routing: near-balanced mixes, skewed topics and requests, skew growing with depth, slow drift,
exact top-k per token, and placement that pays off on its own mix more than on another."""

from __future__ import annotations

import time

import numpy as np
import pytest

from launch.decode_speed import ALL_CPU_STEP
from launch.model_config import load_model_shape
from launch.placement import frequency_masks, gpu_expert_mask
from launch.settings import LaunchSettings
from launch.sim.routing import DRIFT_PERIOD_TOKENS, RoutingModel, topic_key

M3 = load_model_shape(None)
MOE = list(M3.moe_layer_ids)
UNIFORM_16 = gpu_expert_mask(M3, LaunchSettings(kt_weight_path="/w", kt_num_gpu_experts=16))
TOPICS = ("sonnet ocean waves", "python asyncio sockets", "roman empire history", "pasta sauce recipe")


def hot_experts(model: RoutingModel, topic: str, layer: int, how_many: int = 8) -> set[int]:
    return set(np.argsort(model.popularity(topic)[layer])[-how_many:].tolist())


def test_the_same_seed_routes_the_same_way():
    first, second = RoutingModel(M3, UNIFORM_16, seed=5), RoutingModel(M3, UNIFORM_16, seed=5)
    for topic, tokens in [("a b", 1), ("c d", 300), ("a b", 7)]:
        assert np.array_equal(first.route(topic, tokens).counts, second.route(topic, tokens).counts)


def test_a_topic_always_has_the_same_popularity_and_different_topics_different_hot_experts():
    model = RoutingModel(M3, UNIFORM_16)
    # Popularity belongs to the simulated model: another sampling seed (another run) sees the same.
    assert np.array_equal(model.popularity(TOPICS[0]), RoutingModel(M3, UNIFORM_16, seed=9).popularity(TOPICS[0]))
    overlaps = [
        len(hot_experts(model, TOPICS[0], layer) & hot_experts(model, TOPICS[1], layer)) for layer in range(len(MOE))
    ]
    assert np.mean(overlaps) < 5  # out of 8: the topics light up different experts
    assert np.mean(overlaps) > 0.5  # yet the shared base makes some experts hot everywhere


def test_each_token_activates_k_distinct_experts_on_every_moe_layer_only():
    batch = RoutingModel(M3, UNIFORM_16).route(TOPICS[0], 1)
    assert batch.counts.dtype == np.int32 and batch.counts.shape == (60, 128)
    assert not batch.counts[:3].any()
    assert (batch.counts[MOE].sum(axis=1) == 4).all()
    assert batch.counts.max() == 1
    assert batch.activations == 57 * 4


def test_a_long_prefill_never_counts_an_expert_more_than_once_per_token():
    batch = RoutingModel(M3, UNIFORM_16).route(TOPICS[1], 4000)
    assert batch.counts.max() <= 4000
    assert batch.activations == batch.counts.sum()
    assert 0.999 * 4000 * 4 * 57 <= batch.activations <= 4000 * 4 * 57


@pytest.mark.parametrize("tokens", [3, 500])
def test_hit_share_is_the_share_of_activations_on_gpu_experts(tokens):
    batch = RoutingModel(M3, UNIFORM_16).route(TOPICS[2], tokens)
    assert batch.gpu_hit_share == pytest.approx((batch.counts * UNIFORM_16).sum() / batch.counts.sum())


def top_share(popularity: np.ndarray, how_many: int = 8) -> np.ndarray:
    """Per layer: the share of activations its `how_many` busiest experts take."""
    return np.sort(popularity, axis=1)[:, -how_many:].sum(axis=1)


def test_mixed_traffic_is_near_balanced_a_topic_skewed_a_request_more_and_deep_layers_most():
    model = RoutingModel(M3, UNIFORM_16)
    mixed = np.mean([model.popularity(f"topic {i}") for i in range(32)], axis=0)
    one_topic = model.popularity(TOPICS[0])
    one_request = model.popularity(TOPICS[0], request="rid-1")
    fair = 8 / 128
    assert top_share(mixed).mean() < 1.8 * fair
    assert top_share(one_topic).mean() > 1.4 * top_share(mixed).mean()
    assert top_share(one_request).mean() > top_share(one_topic).mean()
    assert top_share(mixed)[-10:].mean() > top_share(mixed)[:10].mean() + 0.02  # skew grows with depth


def test_a_request_sticks_to_its_experts_and_routing_drifts_slowly():
    model = RoutingModel(M3, UNIFORM_16)
    assert np.array_equal(model.popularity(TOPICS[1], "rid-7"), model.popularity(TOPICS[1], "rid-7"))
    assert not np.array_equal(model.popularity(TOPICS[1], "rid-7"), model.popularity(TOPICS[1], "rid-8"))
    start = model.popularity(TOPICS[1])
    after_a_recording = model.popularity(TOPICS[1], tokens_routed=50_000)
    half_a_turn = model.popularity(TOPICS[1], tokens_routed=DRIFT_PERIOD_TOKENS // 2)
    assert np.abs(after_a_recording - start).sum(axis=1).max() < 0.01
    assert np.abs(half_a_turn - start).sum(axis=1).mean() > 0.05


def test_placement_from_one_mix_gains_on_it_and_keeps_part_of_the_gain_on_another():
    recording = RoutingModel(M3, UNIFORM_16, seed=1)
    mix = [f"{topic} {i}" for topic in TOPICS for i in range(2)]
    recorded = sum(recording.route(topic, 3000, f"r{i}").counts.astype(np.int64) for i, topic in enumerate(mix))
    by_frequency = frequency_masks(recorded.astype(np.float32), total=16 * 57)
    by_frequency[:3] = True
    uniform, frequency = RoutingModel(M3, UNIFORM_16, seed=2), RoutingModel(M3, by_frequency, seed=2)

    def gain(topics: list[str]) -> float:
        batches = [(u.route(t, 3000, t), f.route(t, 3000, t)) for t in topics for u, f in [(uniform, frequency)]]
        return float(np.mean([fb.gpu_hit_share - ub.gpu_hit_share for ub, fb in batches]))

    same, other = gain(mix), gain([f"gardening tomatoes {i}" for i in range(8)])
    assert same > 0.05
    assert 0.2 * same < other < 0.8 * same


def test_decode_step_time_is_one_on_the_gpu_and_grows_with_cpu_activations():
    assert RoutingModel(M3, np.ones((60, 128), dtype=bool)).route(TOPICS[0], 5).step_time == pytest.approx(1.0)
    none_on_gpu = np.zeros((60, 128), dtype=bool)
    assert RoutingModel(M3, none_on_gpu).route(TOPICS[0], 5).step_time == pytest.approx(ALL_CPU_STEP)
    few = RoutingModel(M3, UNIFORM_16).route(TOPICS[0], 5).step_time
    assert 1.0 < few < ALL_CPU_STEP


def test_more_gpu_experts_hit_more():
    few = RoutingModel(M3, UNIFORM_16).route(TOPICS[3], 2000).gpu_hit_share
    many_mask = gpu_expert_mask(M3, LaunchSettings(kt_weight_path="/w", kt_num_gpu_experts=64))
    many = RoutingModel(M3, many_mask).route(TOPICS[3], 2000).gpu_hit_share
    assert many > few + 0.2
    assert RoutingModel(M3, np.ones((60, 128), dtype=bool)).route(TOPICS[3], 5).gpu_hit_share == 1.0


def test_routing_is_cheap_for_a_decode_step_and_a_long_prefill():
    model = RoutingModel(M3, UNIFORM_16)
    for tokens, budget_ms in [(1, 5.0), (4000, 20.0)]:
        model.route(TOPICS[0], tokens)
        start = time.perf_counter()
        for _ in range(20):
            model.route(TOPICS[0], tokens)
        assert (time.perf_counter() - start) / 20 * 1000 < budget_ms


def test_topic_key_keeps_the_first_content_words():
    assert topic_key("Please write a poem about the sea and its waves") == "poem waves"
    assert topic_key("Explain Rust lifetimes, borrow checker and traits") == "rust lifetimes borrow"
    assert topic_key("hi") == "hi"
