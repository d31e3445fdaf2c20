"""The expert panel's source against a real HTTP server that keeps sglang's recorder rings and writes its dumps."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from m3ui.experts.hit_rate import HitRate
from m3ui.monitor.engine import EngineSource
from m3ui.monitor.experts import ExpertSource
from m3ui.monitor.sampler import Sampler, SamplerConfig
from m3ui.monitor.target import MonitorTarget
from tests.monitor_fake_engine import RECORDER_PATHS, FakeEngine, FakeRecorder, server_info_body

LAYERS, EXPERTS = 4, 6  # layer 0 dense
GPU = np.zeros((LAYERS, EXPERTS), dtype=bool)
GPU[1:, :2] = True  # experts 0 and 1 of every MoE layer on the GPU


def _pass(*hits: tuple[int, int]) -> np.ndarray:
    """One forward pass's counts: one activation per (layer, expert), every MoE layer routed."""
    counts = np.zeros((LAYERS, EXPERTS), dtype=np.int32)
    for layer in range(1, LAYERS):
        counts[layer, 5] = 1  # a CPU expert
    for layer, expert in hits:
        counts[layer, expert] += 1
    return counts


class Rig:
    """An engine source and an expert source watching one fake engine, stepped by hand."""

    def __init__(self, engine: FakeEngine, folder, assumed: np.ndarray | None = None) -> None:
        self.engine_source = EngineSource(timeout_s=1.0, slow_after_s=0.5)
        self.experts = ExpertSource(window_s=600, dump_every_s=5, timeout_s=2.0, top_n=3)
        target = MonitorTarget(engine_url=engine.url, recorder_dir=folder, assumed_gpu_mask=assumed)
        self.engine_source.set_target(target)
        self.experts.set_target(target)

    def poll(self):
        return self.experts.poll(self.engine_source.sample(), self.engine_source.epoch)

    def close(self) -> None:
        self.engine_source.close()
        self.experts.close()


@pytest.fixture
def recorder(tmp_path):
    return FakeRecorder(tmp_path / "recorder", rows=8, layers=LAYERS, experts=EXPERTS)


@pytest.fixture
def rig(recorder):
    with FakeEngine(recorder) as engine:
        rig = Rig(engine, recorder.folder)
        rig.fake = engine
        yield rig
        rig.close()


def _recorder_calls(engine: FakeEngine) -> list[str]:
    return [path for _, path in engine.hits if path in RECORDER_PATHS]


def test_without_a_recorder_mode_the_sampler_never_calls_the_recorder_endpoints(tmp_path):
    config = SamplerConfig(interval_s=0.02, expert_dump_every_s=0.02, request_timeout_s=1.0)
    with FakeEngine() as engine:
        sampler = Sampler(MonitorTarget(engine_url=engine.url, recorder_dir=tmp_path), config)
        with sampler:
            deadline = time.monotonic() + 5
            while sampler.latest().experts.status != "disabled" and time.monotonic() < deadline:
                time.sleep(0.02)
            time.sleep(0.2)  # many more ticks and polls
            assert sampler.expert_checkpoint() is None
        snapshot = sampler.latest().experts
        assert snapshot.status == "disabled"
        for needed in ("--expert-distribution-recorder-mode stat", "--record-kt-gpu-expert-distribution",
                       "--expert-distribution-recorder-buffer-size", "mounted"):
            assert needed in snapshot.reason
        assert [p for _, p in engine.hits].count("/v1/loads") > 5
        assert _recorder_calls(engine) == [] and not engine.killed


def test_a_mode_this_panel_cannot_read_is_explained_without_calling_the_recorder(tmp_path, recorder):
    with FakeEngine(recorder) as engine:
        engine.info = server_info_body(recorder_mode="per_pass")
        rig = Rig(engine, recorder.folder)
        snapshot = rig.poll()
        rig.close()
    assert snapshot.status == "unsupported_mode" and "'per_pass'" in snapshot.reason
    assert _recorder_calls(engine) == []


def test_recording_starts_once_then_each_poll_reads_and_deletes_the_new_dumps(rig, recorder):
    recorder.folder.mkdir(parents=True)
    stale = recorder.folder / "expert_distribution_recorder_1.0.pt"  # from before: not ours
    stale.write_bytes(b"left by someone else")
    first = rig.poll()
    assert first.status == "recording" and _recorder_calls(rig.fake) == ["/start_expert_distribution_record"]
    assert recorder.recording
    for hits in ([(1, 0), (2, 0), (3, 1)], [(1, 2), (2, 1), (3, 0)]):
        recorder.record_pass(_pass(*hits), GPU)
    snapshot = rig.poll()
    assert _recorder_calls(rig.fake)[1:] == ["/dump_expert_distribution_record"]
    assert snapshot.status == "recording" and snapshot.warnings == ()
    assert snapshot.activations == 6 + 6  # each pass: 3 routed hits + 3 on expert 5
    assert snapshot.hit_rate == HitRate(5, 12) and snapshot.residency_source == "recorded"
    assert snapshot.layer_hit_rates == (None, 0.25, 0.5, 0.5)  # layer 1 routed expert 2 (CPU) once
    assert snapshot.hottest_cpu[0].expert == 5 and snapshot.coldest_gpu[0].activations == 0
    assert snapshot.heatmap_data_url.startswith("data:image/png;base64,")
    assert sorted(p.name for p in recorder.folder.iterdir()) == [stale.name]  # ours deleted, the stale one kept
    assert rig.poll().activations == 12  # an idle dump adds nothing


def test_two_checkpoints_bracket_exactly_the_passes_of_one_answer(rig, recorder):
    rig.poll()
    recorder.record_pass(_pass((1, 4), (2, 4), (3, 4)), GPU)  # before the answer: all CPU
    t0 = rig.experts.checkpoint()
    recorder.record_pass(_pass((1, 0), (2, 1), (3, 0)), GPU)  # the answer: 3 GPU hits of 6
    t1 = rig.experts.checkpoint()
    assert t0 is not None and t1 is not None and t1 >= t0
    assert rig.experts.hit_rate_between(t0, t1) == HitRate(3, 6)
    assert rig.experts.latest().hit_rate == HitRate(3, 12)


def test_a_ring_that_filled_up_between_two_dumps_is_reported(rig, recorder):
    rig.poll()
    for _ in range(recorder.rows + 2):
        recorder.record_pass(_pass(), GPU)
    snapshot = rig.poll()
    assert snapshot.activations == 3 * recorder.rows  # the two oldest passes were overwritten
    assert any("--expert-distribution-recorder-buffer-size" in w for w in snapshot.warnings)


def test_dumps_that_never_appear_in_the_folder_turn_into_an_error_that_names_the_folder(recorder, tmp_path):
    with FakeEngine(recorder) as engine:
        rig = Rig(engine, tmp_path / "elsewhere")
        rig.poll()
        states = [rig.poll().status for _ in range(3)]
        rig.close()
    assert states[0] == "recording" and states[-1] == "error"
    assert str(tmp_path / "elsewhere") in rig.experts.latest().reason


def test_an_engine_that_comes_back_gets_its_recorder_started_again(rig, recorder):
    rig.poll()
    url = rig.fake.url
    rig.engine_source.set_target(MonitorTarget(engine_url="http://127.0.0.1:9"))  # nothing listens on port 9
    assert rig.poll().status == "no_engine"
    rig.engine_source.set_target(MonitorTarget(engine_url=url))
    rig.poll()
    assert _recorder_calls(rig.fake).count("/start_expert_distribution_record") == 2


def test_without_gpu_masks_the_placement_from_the_settings_stands_in(tmp_path):
    recorder = FakeRecorder(tmp_path / "rec", rows=8, layers=LAYERS, experts=EXPERTS, masks=False)
    with FakeEngine(recorder) as engine:
        unknown, assumed = Rig(engine, recorder.folder), Rig(engine, recorder.folder, assumed=GPU)
        unknown.poll()
        recorder.record_pass(_pass((1, 0)), GPU)
        blind = unknown.poll()
        assumed.poll()  # restarts recording: a new window for this source
        recorder.record_pass(_pass((1, 0)), GPU)
        placed = assumed.poll()
        unknown.close()
        assumed.close()
    assert blind.hit_rate is None and blind.residency_source == "unknown"
    assert any("--record-kt-gpu-expert-distribution" in w for w in blind.warnings)
    assert placed.residency_source == "assumed" and placed.hit_rate == HitRate(1, 4)


def test_readers_do_not_wait_for_a_slow_dump(rig):
    rig.poll()
    rig.fake.delay_s["/dump_expert_distribution_record"] = 1.0
    polling = threading.Thread(target=rig.poll)
    polling.start()
    time.sleep(0.1)  # the dump is in flight
    started = time.monotonic()
    rig.experts.latest()
    rig.experts.points()
    waited = time.monotonic() - started
    polling.join(5)
    assert waited < 0.5  # the dump takes 1 s
