"""The placement planner (launch/placement_plan/): predictions from recorded dumps on the exact rules,
stability and warnings, and the profile the engine reads back (checked with real torch, the engine's own)."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pytest
import torch

from launch.model_config import load_model_shape
from launch.placement import gpu_expert_mask
from launch.placement_plan.predict import Hardware, plan_placement
from launch.placement_plan.profile_file import save_profile
from launch.placement_plan.prompts import MIX_B_TOPICS, builtin_mix
from launch.placement_plan.recording import RecordingError, read_recording
from launch.placement_plan.report import launch_flags, plan_json
from launch.placement_plan.strategies import STRATEGIES, hit_rate, strategy_mask
from launch.presets import single_gpu, with_expert_monitoring
from launch.sim.recorder import create_recorder
from launch.sim.routing import RoutingModel, topic_key
from torchzip.writer import save_tensors

M3 = load_model_shape(None)
SETTINGS = single_gpu().replace(kt_weight_path="/weights")
UNIFORM = gpu_expert_mask(M3, SETTINGS)
ONE_GPU = Hardware(tp=1, gpu_bytes=96e9, mem_fraction=0.85)


def record(folder: Path, prompts: list[str], decode_tokens: int, mask: np.ndarray = UNIFORM, seed: int = 1,
           buffer_size: int = -1) -> list[Path]:
    """The sim's routing and recorder: a prefill and a decode pass per conversation, one dump per conversation."""
    recorder = create_recorder(with_expert_monitoring(SETTINGS, buffer_size), M3, mask, folder)
    routing = RoutingModel(M3, mask, seed)
    recorder.start()
    dumps = []
    for prompt in prompts:
        rid = uuid.uuid4().hex
        for tokens in (40, decode_tokens):
            recorder.record_pass(routing.route(topic_key(prompt), tokens, rid).counts)
        dumps.extend(recorder.dump())
    return dumps


def measured_hit(mask: np.ndarray, prompts: list[str], seed: int) -> float:
    routing = RoutingModel(M3, mask, seed)
    batches = [routing.route(topic_key(p), 1000, uuid.uuid4().hex) for p in prompts]
    return sum(b.gpu_hit_share * b.activations for b in batches) / sum(b.activations for b in batches)


@pytest.fixture(scope="module")
def long_recording(tmp_path_factory):
    dumps = record(tmp_path_factory.mktemp("dumps"), builtin_mix(), 1000)
    return read_recording(dumps, M3)


def test_each_dump_is_a_segment_and_the_masks_give_the_run_its_own_placement(long_recording):
    assert len(long_recording.segments) == 24 and long_recording.dumps == 24
    assert np.array_equal(long_recording.recorded_mask, UNIFORM & np.asarray([[i >= 3] for i in range(60)]))
    assert long_recording.tokens(M3) == 24 * 1040


def test_data_free_strategies_are_scored_on_the_recording_with_the_engines_exact_masks(long_recording):
    plan = plan_placement(long_recording, M3, 4, ONE_GPU)
    for strategy in ("uniform", "front-loading", "random"):
        exact = gpu_expert_mask(M3, SETTINGS.replace(kt_expert_placement_strategy=strategy))
        assert plan.predicted[strategy].hit_rate == pytest.approx(hit_rate(long_recording.counts, exact, M3))
    assert plan.recorded_hit_rate == pytest.approx(plan.predicted["uniform"].hit_rate)


def test_frequency_prediction_comes_within_two_points_of_a_replay_and_above_uniform(long_recording):
    plan = plan_placement(long_recording, M3, 4, ONE_GPU)
    relaunched = strategy_mask(M3, "frequency", 4, long_recording.counts)
    replayed = measured_hit(relaunched, builtin_mix(), seed=7)
    assert abs(plan.predicted["frequency"].hit_rate - replayed) <= 0.02
    assert replayed > measured_hit(UNIFORM, builtin_mix(), seed=7) + 0.01
    assert plan.predicted["frequency"].decode_tps > plan.predicted["uniform"].decode_tps


def test_on_other_topics_the_gain_shrinks_and_the_prediction_says_so(long_recording):
    plan = plan_placement(long_recording, M3, 4, ONE_GPU)
    relaunched = strategy_mask(M3, "frequency", 4, long_recording.counts)
    other = builtin_mix(MIX_B_TOPICS)
    measured_gain = measured_hit(relaunched, other, 8) - measured_hit(UNIFORM, other, 8)
    predicted_gain = plan.predicted["frequency"].hit_rate - plan.predicted["uniform"].hit_rate
    assert plan.unlike_mix is not None
    unlike_gain = plan.unlike_mix.hit_rate - plan.unlike_mix.uniform_hit_rate
    assert measured_gain < 0.8 * predicted_gain and unlike_gain < 0.8 * predicted_gain
    assert "on traffic unlike the recording" in plan_json(plan, 24, None)["recommendation"]


def test_the_curve_rises_with_gpu_experts_and_frequency_saves_vram(long_recording):
    plan = plan_placement(long_recording, M3, 16, ONE_GPU)
    for strategy in ("uniform", "frequency"):
        hits = [p.hit_rate for p in plan.curve[strategy]]
        assert hits == sorted(hits) and hits[0] == 0.0 and hits[-1] == pytest.approx(1.0)
    fewest = plan.frequency_matches_uniform_at
    assert fewest is not None and fewest < 16
    assert plan.vram_saved_gb == pytest.approx((16 - fewest) * 3.33, rel=0.01)  # 3.33 GB per expert per layer
    assert 0 < plan.vram_ceiling < 128


def test_json_has_the_issues_keys_and_flags_name_the_saved_profile(long_recording, tmp_path):
    plan = plan_placement(long_recording, M3, 4, ONE_GPU)
    profile = save_profile(tmp_path / "profile.pt", long_recording.counts)
    data = plan_json(plan, 24, profile)
    assert list(data)[:5] == ["gpu_experts", "recorded_tokens", "predicted", "curve", "flags"]
    assert set(data["predicted"]) == set(STRATEGIES) == set(data["curve"])
    assert all(0 <= hit <= 1 for hit in data["predicted"].values())
    assert data["flags"] == launch_flags(plan, profile) == [
        "--kt-expert-placement-strategy", "frequency", "--init-expert-location", str(profile),
        "--kt-num-gpu-experts", "4"]
    assert data["confidence"] == "high" and data["warnings"] == []


def test_the_saved_profile_gives_the_engine_the_planners_masks_as_torch_computes_them(long_recording, tmp_path):
    profile = save_profile(tmp_path / "profile.pt", long_recording.counts)
    for n in (4, 40):
        freq = torch.load(profile, weights_only=True)["logical_count"].sum(dim=0).float()
        _, top = torch.topk(freq.view(-1), k=n * 57, largest=True, sorted=False)
        real = np.zeros(60 * 128, dtype=bool)
        real[top.numpy()] = True
        real = real.reshape(60, 128)
        real[:3] = True
        engine = gpu_expert_mask(M3, SETTINGS.replace(kt_num_gpu_experts=n, kt_expert_placement_strategy="frequency",
                                                      init_expert_location=str(profile)))
        assert np.array_equal(engine, real)
        assert np.array_equal(strategy_mask(M3, "frequency", n, long_recording.counts), real)


def test_a_short_recording_is_flagged_and_trusted_little(tmp_path):
    recording = read_recording(record(tmp_path, builtin_mix()[:3], 300), M3)
    plan = plan_placement(recording, M3, 4, ONE_GPU)
    assert plan.recorded_tokens == 3 * 340
    assert any("short recording fakes skew" in w for w in plan.warnings)
    assert plan_json(plan, len(recording.segments), None)["confidence"] == "low"


def test_one_dump_is_cut_into_chronological_segments_and_a_full_default_ring_is_flagged(tmp_path):
    recorder = create_recorder(with_expert_monitoring(SETTINGS, 1000), M3, UNIFORM, tmp_path)
    routing = RoutingModel(M3, UNIFORM)
    recorder.start()
    for _ in range(1100):
        recorder.record_pass(routing.route("ocean sonnet", 1, "r").counts)
    recording = read_recording([recorder.dump()[0]], M3)
    assert len(recording.segments) == 8 and recording.passes == 1000 and recording.ring_full
    plan = plan_placement(recording, M3, 4, ONE_GPU)
    assert any("--expert-distribution-recorder-buffer-size -1" in w for w in plan.warnings)


def test_files_that_are_not_stat_dumps_of_this_model_are_refused_with_the_reason(tmp_path):
    other = tmp_path / "mapping.pt"
    save_tensors(other, {"physical_to_logical_map": np.zeros((60, 128), dtype=np.int64)})
    with pytest.raises(RecordingError, match="neither logical_count nor gpu_expert_masks"):
        read_recording([other], M3)
    wrong = tmp_path / "wrong.pt"
    save_tensors(wrong, {"logical_count": np.ones((2, 48, 128), dtype=np.int32)})
    with pytest.raises(RecordingError, match="does not fit the model"):
        read_recording([wrong], M3)
    empty = tmp_path / "empty.pt"
    save_tensors(empty, {"logical_count": np.zeros((5, 60, 128), dtype=np.int32)})
    with pytest.raises(RecordingError, match="hold no routed tokens"):
        read_recording([empty], M3)
    (tmp_path / "junk.pt").write_bytes(b"not a zip")
    with pytest.raises(RecordingError, match="cannot read"):
        read_recording([tmp_path / "junk.pt"], M3)
    with pytest.raises(ValueError, match="only from a .pt file"):
        save_profile(tmp_path / "profile.json", np.ones((60, 128)))
