"""The simulated routing: topic-dependent hot experts, exact top-k per token, and placement that pays off."""

from __future__ import annotations

import time

import numpy as np
import pytest

from launch.model_config import load_model_shape
from launch.placement import frequency_masks, gpu_expert_mask
from launch.settings import LaunchSettings
from launch.sim.routing import RoutingModel, topic_key

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


def test_placement_from_recorded_traffic_hits_more_and_decodes_faster_than_uniform():
    recording = RoutingModel(M3, UNIFORM_16, seed=1)
    recorded = sum(recording.route(topic, 2000).counts.astype(np.int64) for topic in TOPICS)
    by_frequency = frequency_masks(recorded.astype(np.float32), total=16 * 57)
    by_frequency[:3] = True
    uniform, frequency = RoutingModel(M3, UNIFORM_16, seed=2), RoutingModel(M3, by_frequency, seed=2)
    for topic in (*TOPICS, "an unseen topic about gardening"):
        uniform_share = uniform.route(topic, 1000).gpu_hit_share
        frequency_share = frequency.route(topic, 1000).gpu_hit_share
        assert frequency_share > uniform_share + 0.1
        assert RoutingModel.decode_seconds_per_token(frequency_share, 20.0) < uniform.decode_seconds_per_token(
            uniform_share, 20.0
        )


def test_more_gpu_experts_hit_more():
    few = RoutingModel(M3, UNIFORM_16).route(TOPICS[3], 2000).gpu_hit_share
    many_mask = gpu_expert_mask(M3, LaunchSettings(kt_weight_path="/w", kt_num_gpu_experts=64))
    many = RoutingModel(M3, many_mask).route(TOPICS[3], 2000).gpu_hit_share
    assert many > few + 0.2
    assert RoutingModel(M3, np.ones((60, 128), dtype=bool)).route(TOPICS[3], 5).gpu_hit_share == 1.0


def test_decode_time_is_base_speed_at_full_hit_share_and_grows_with_misses():
    assert RoutingModel.decode_seconds_per_token(1.0, 25.0) == pytest.approx(1 / 25)
    times = [RoutingModel.decode_seconds_per_token(share, 25.0) for share in (1.0, 0.7, 0.3, 0.0)]
    assert times == sorted(times) and times[-1] > 2 * times[0]
    with pytest.raises(ValueError):
        RoutingModel.decode_seconds_per_token(0.5, 0.0)


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
