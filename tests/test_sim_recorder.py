"""The simulated recorder writes what sglang-kt's `stat` recorder writes, read back by real torch.load."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

from launch.model_config import load_model_shape, parse_model_config
from launch.placement import gpu_expert_mask
from launch.settings import LaunchSettings
from launch.sim.recorder import (
    DEFAULT_BUFFER_SIZE,
    RECORDER_DIR_ENV,
    Recorder,
    RecorderModeUnsupported,
    create_recorder,
    recorder_folder,
)
from launch.sim.routing import RoutingModel

M3 = load_model_shape(None)
KT_16 = LaunchSettings(
    kt_weight_path="/w",
    kt_num_gpu_experts=16,
    expert_distribution_recorder_mode="stat",
    record_kt_gpu_expert_distribution=True,
)
TINY = parse_model_config({
    "num_hidden_layers": 3, "hidden_size": 8, "num_attention_heads": 2, "intermediate_size": 4,
    "num_local_experts": 4, "num_experts_per_tok": 1, "vocab_size": 10, "moe_layer_freq": [0, 1, 1],
})  # fmt: skip


def real_load(path: Path) -> dict:
    return torch.load(path, weights_only=True, map_location="cpu")


def tiny_recorder(tmp_path: Path, buffer_size: int, masks: bool = False) -> Recorder:
    return Recorder("stat", buffer_size, masks, tmp_path, TINY, np.ones((3, 4), dtype=bool))


def pass_of(value: int) -> np.ndarray:
    return np.full((3, 4), value, dtype=np.int32)


def dumped_counts(recorder: Recorder) -> np.ndarray:
    return real_load(recorder.dump()[0])["logical_count"].numpy()


def test_a_dump_has_the_real_file_names_keys_shapes_and_dtypes(tmp_path, monkeypatch):
    monkeypatch.setenv(RECORDER_DIR_ENV, str(tmp_path / "dumps"))
    mask = gpu_expert_mask(M3, KT_16)
    recorder = create_recorder(KT_16, M3, mask)
    recorder.start()
    routing = RoutingModel(M3, mask)
    batches = [routing.route("sea poem", tokens) for tokens in (40, 1, 1)]
    for batch in batches:
        recorder.record_pass(batch.counts)

    stat_path, mask_path = recorder.dump()

    assert stat_path.parent == mask_path.parent == tmp_path / "dumps"
    assert re.fullmatch(r"expert_distribution_recorder_\d+\.\d+\.pt", stat_path.name)
    assert re.fullmatch(r"gpu_expert_distribution_\d+\.\d+\.pt", mask_path.name)
    stat = real_load(stat_path)
    assert list(stat) == ["rank", "logical_count", "average_utilization_rate_over_window"]
    assert stat["rank"] == 0 and stat["average_utilization_rate_over_window"] is None
    assert stat["logical_count"].dtype == torch.int32
    assert stat["logical_count"].shape == (DEFAULT_BUFFER_SIZE, 60, 128)
    assert np.array_equal(stat["logical_count"].sum(dim=0).numpy(), sum(batch.counts for batch in batches))
    masks = real_load(mask_path)
    assert list(masks) == ["gpu_expert_masks"]
    assert masks["gpu_expert_masks"].dtype == torch.bool
    assert masks["gpu_expert_masks"].shape == (DEFAULT_BUFFER_SIZE, 60, 128)
    recorded = masks["gpu_expert_masks"].numpy()
    assert all(np.array_equal(recorded[i, 3:], mask[3:]) for i in range(3))
    assert not recorded[:, :3].any()  # dense layers never report a mask
    assert not recorded[3:].any()  # rows of passes not (yet) recorded


def saved_locations(path: Path) -> list[str]:
    seen: list[str] = []
    torch.load(path, weights_only=True, map_location=lambda storage, location: seen.append(location) or storage)
    return seen


def test_the_stat_tensor_is_saved_from_the_gpu_and_the_masks_from_the_cpu(tmp_path):
    stat_path, mask_path = create_recorder(KT_16, M3, gpu_expert_mask(M3, KT_16), folder=tmp_path).dump()
    assert saved_locations(stat_path) == ["cuda:0"]
    assert saved_locations(mask_path) == ["cpu"]


def test_a_dump_fed_back_as_init_expert_location_places_the_hot_experts_on_gpu(tmp_path):
    uniform = gpu_expert_mask(M3, KT_16)
    recorder = create_recorder(KT_16, M3, uniform, folder=tmp_path)
    routing = RoutingModel(M3, uniform)
    recorder.start()
    for topic in ("sea poem", "python sockets", "roman history"):
        recorder.record_pass(routing.route(topic, 2000).counts)
    frequency = gpu_expert_mask(
        M3, KT_16.replace(kt_expert_placement_strategy="frequency", init_expert_location=str(recorder.dump()[0]))
    )
    assert frequency[3:].sum() == uniform[3:].sum() == 16 * 57
    after = RoutingModel(M3, frequency, seed=1).route("sea poem", 1000).gpu_hit_share
    before = RoutingModel(M3, uniform, seed=1).route("sea poem", 1000).gpu_hit_share
    assert after > before + 0.05  # one topic fed back (mixed traffic is near-balanced: launch/sim/routing.py)


def test_the_ring_buffer_overwrites_its_oldest_rows_and_keeps_its_index_across_a_reset(tmp_path):
    recorder = tiny_recorder(tmp_path, buffer_size=3)
    recorder.start()
    for value in range(1, 6):
        recorder.record_pass(pass_of(value))
    assert dumped_counts(recorder)[:, 1, 0].tolist() == [4, 5, 3]  # storage order, not time order
    assert not dumped_counts(recorder).any()  # the previous dump reset the buffer
    recorder.record_pass(pass_of(7))
    assert dumped_counts(recorder)[:, 1, 0].tolist() == [0, 0, 7]  # sglang's write index survives resets


def test_an_unbounded_buffer_dumps_exactly_the_passes_since_the_last_reset(tmp_path):
    recorder = tiny_recorder(tmp_path, buffer_size=-1)
    recorder.start()
    for value in range(130):  # past the first 128-row allocation
        recorder.record_pass(pass_of(value))
    assert dumped_counts(recorder)[:, 0, 0].tolist() == list(range(130))
    assert dumped_counts(recorder).shape == (0, 3, 4)


def test_passes_count_only_between_start_and_stop_and_a_dump_keeps_recording(tmp_path):
    recorder = tiny_recorder(tmp_path, buffer_size=4)
    recorder.record_pass(pass_of(1))  # not started
    recorder.start()
    recorder.record_pass(pass_of(2))
    recorder.start()  # a second start resets, as sglang's does
    recorder.record_pass(pass_of(3))
    assert dumped_counts(recorder)[:, 0, 0].sum() == 3
    assert recorder.recording
    recorder.record_pass(pass_of(4))
    recorder.stop()
    recorder.record_pass(pass_of(5))
    assert dumped_counts(recorder)[:, 0, 0].sum() == 4


def test_mask_rows_are_false_when_kt_is_inactive(tmp_path):
    settings = LaunchSettings(
        expert_distribution_recorder_mode="stat",
        record_kt_gpu_expert_distribution=True,
        expert_distribution_recorder_buffer_size=2,
    )
    recorder = create_recorder(settings, M3, gpu_expert_mask(M3, settings), folder=tmp_path)
    recorder.start()
    recorder.record_pass(np.zeros((60, 128), dtype=np.int32))
    stat_path, mask_path = recorder.dump()
    assert real_load(stat_path)["logical_count"].shape == (2, 60, 128)
    assert not real_load(mask_path)["gpu_expert_masks"].any()


def test_without_a_recorder_mode_there_is_no_recorder_and_without_the_flag_no_mask_file(tmp_path):
    assert create_recorder(LaunchSettings(), M3, np.ones((60, 128), dtype=bool), folder=tmp_path) is None
    stat_only = KT_16.replace(record_kt_gpu_expert_distribution=False)
    assert len(create_recorder(stat_only, M3, gpu_expert_mask(M3, stat_only), folder=tmp_path).dump()) == 1


def test_detail_modes_are_refused_clearly(tmp_path):
    with pytest.raises(RecorderModeUnsupported, match="per_token"):
        create_recorder(
            KT_16.replace(expert_distribution_recorder_mode="per_token"),
            M3,
            gpu_expert_mask(M3, KT_16),
            folder=tmp_path,
        )


def test_dumps_go_to_tmp_unless_the_environment_names_a_folder():
    assert recorder_folder({}) == Path("/tmp")
    assert recorder_folder({RECORDER_DIR_ENV: "/data/rec"}) == Path("/data/rec")


def test_concurrent_passes_and_dumps_lose_nothing(tmp_path):
    recorder = tiny_recorder(tmp_path, buffer_size=-1, masks=True)
    recorder.start()
    threads = [
        threading.Thread(target=lambda: [recorder.record_pass(pass_of(1)) for _ in range(300)]) for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    totals = [dumped_counts(recorder)[:, 0, 0].sum() for _ in range(5)]
    for thread in threads:
        thread.join()
    totals.append(dumped_counts(recorder)[:, 0, 0].sum())
    assert sum(totals) == 4 * 300
