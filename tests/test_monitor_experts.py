"""The expert panel's source against the simulated engine, whose recorder writes sglang's real dump files.

What the panel shows is checked against the dumps as real torch reads them. Uniform placement with the
seed's 4 GPU experts per MoE layer puts experts 0..3 of every MoE layer on the GPU.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from launch.model_config import load_model_shape
from launch.placement import gpu_expert_mask
from m3ui.experts.hit_rate import HitRate
from m3ui.monitor.engine import EngineSnapshot, EngineSource
from m3ui.monitor.engine_parse import ServerInfo
from m3ui.monitor.experts import ExpertSource
from m3ui.monitor.sampler import Sampler, SamplerConfig
from m3ui.monitor.target import MonitorTarget
from tests.fault_proxy import FaultProxy
from tests.monitor_sims import RECORDER_PATHS, alive, chat, dump_now, recorder_on, sim_with
from tests.sim_process import sim_settings

M3 = load_model_shape(None)
MOE = list(M3.moe_layer_ids)
GPU_EXPERTS = 4  # the single-GPU preset's --kt-num-gpu-experts


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("recorder")


@pytest.fixture(scope="module")
def recording(folder):
    """stat recorder, GPU masks, an unbounded buffer."""
    with sim_with(folder, **recorder_on()) as sim:
        yield sim


@pytest.fixture(scope="module")
def plain():
    """No recorder mode: its recorder endpoints kill it, like the real server."""
    with sim_with() as sim:
        yield sim


@pytest.fixture(scope="module")
def ring_folder(tmp_path_factory):
    return tmp_path_factory.mktemp("ring")


@pytest.fixture(scope="module")
def ring(ring_folder):
    """stat recorder without GPU masks, a ring of 8 forward passes."""
    with sim_with(ring_folder, **recorder_on(buffer_size=8, masks=False)) as sim:
        yield sim


class Rig:
    """An engine source and an expert source watching one engine, stepped by hand."""

    def __init__(self, url: str, folder, assumed: np.ndarray | None = None) -> None:
        self.engine_source = EngineSource(timeout_s=5.0, slow_after_s=2.0)
        self.experts = ExpertSource(window_s=600, dump_every_s=5, timeout_s=10.0, top_n=3)
        target = MonitorTarget(engine_url=url, recorder_dir=folder, assumed_gpu_mask=assumed)
        self.engine_source.set_target(target)
        self.experts.set_target(target)

    def poll(self):
        return self.experts.poll(self.engine_source.sample(), self.engine_source.epoch)

    def close(self) -> None:
        self.engine_source.close()
        self.experts.close()


@pytest.fixture
def proxy(recording):
    with FaultProxy(recording.url) as fault:
        yield fault


@pytest.fixture
def rig(proxy, folder):
    rig = Rig(proxy.url, folder)
    yield rig
    rig.close()


def _recorder_calls(proxy: FaultProxy) -> list[str]:
    return [path for path in proxy.paths() if path in RECORDER_PATHS]


def test_without_a_recorder_mode_the_sampler_never_calls_the_recorder_endpoints(plain, tmp_path):
    config = SamplerConfig(interval_s=0.02, expert_dump_every_s=0.02, request_timeout_s=2.0)
    with FaultProxy(plain.url) as proxy:
        sampler = Sampler(MonitorTarget(engine_url=proxy.url, recorder_dir=tmp_path), config)
        with sampler:
            deadline = time.monotonic() + 5
            while sampler.latest().experts.status != "disabled" and time.monotonic() < deadline:
                time.sleep(0.02)
            time.sleep(0.3)  # many more ticks and polls
            assert sampler.expert_checkpoint() is None
        snapshot = sampler.latest().experts
        assert snapshot.status == "disabled"
        for needed in ("--expert-distribution-recorder-mode stat", "--record-kt-gpu-expert-distribution",
                       "--expert-distribution-recorder-buffer-size", "mounted"):
            assert needed in snapshot.reason
        assert proxy.paths().count("/v1/loads") > 5
        assert _recorder_calls(proxy) == [] and "/metrics" not in proxy.paths()  # nor /metrics: not enabled
    assert alive(plain)


def test_a_mode_this_panel_cannot_read_is_explained_without_calling_the_recorder(plain, tmp_path):
    with FaultProxy(plain.url) as proxy:
        rig = Rig(proxy.url, tmp_path)
        answered = rig.engine_source.sample()
        info = ServerInfo("0.7.2", "MiniMax-M3", "per_pass", 1000, True, False)  # what a per_pass engine reports
        snapshot = rig.experts.poll(EngineSnapshot(answered.time, "ok", info=info), rig.engine_source.epoch)
        rig.close()
        assert snapshot.status == "unsupported_mode" and "'per_pass'" in snapshot.reason
        assert _recorder_calls(proxy) == []
    assert alive(plain)


def test_an_engine_whose_dump_folder_is_not_local_is_explained_without_calling_the_recorder(proxy):
    rig = Rig(proxy.url, None)  # an attached engine: its dumps land on its own host
    snapshot = rig.poll()
    rig.close()
    assert snapshot.status == "no_local_folder" and "dump folder to be local" in snapshot.reason
    assert _recorder_calls(proxy) == []


def test_recording_starts_once_then_each_poll_reads_and_deletes_the_new_dumps(recording, folder, rig, proxy):
    stale = folder / "expert_distribution_recorder_1.0.pt"  # from before: not ours
    stale.write_bytes(b"left by someone else")
    first = rig.poll()
    assert first.status == "recording" and _recorder_calls(proxy) == ["/start_expert_distribution_record"]
    chat(recording.url, "write a poem about the sea")
    chat(recording.url, "explain how tides work")
    truth = dump_now(recording.url, folder)  # read by torch before the monitor reads and deletes it
    snapshot = rig.poll()
    assert _recorder_calls(proxy)[1:] == ["/dump_expert_distribution_record"]
    assert snapshot.status == "recording" and snapshot.warnings == ()
    assert snapshot.activations == truth.total_activations > 0
    assert np.array_equal(snapshot.counts, truth.counts)
    assert snapshot.hit_rate == HitRate(truth.gpu_activations, truth.total_activations)
    assert snapshot.residency_source == "recorded"
    assert np.array_equal(snapshot.residency[MOE], truth.residency[MOE])
    assert snapshot.residency[MOE, :GPU_EXPERTS].all() and not snapshot.residency[MOE, GPU_EXPERTS:].any()
    assert [snapshot.layer_hit_rates[layer] is None for layer in range(M3.num_layers)] == [
        layer not in MOE for layer in range(M3.num_layers)]  # dense layers route nothing
    assert all(rank.expert >= GPU_EXPERTS for rank in snapshot.hottest_cpu)
    assert all(rank.expert < GPU_EXPERTS for rank in snapshot.coldest_gpu)
    assert snapshot.heatmap_data_url.startswith("data:image/png;base64,")
    assert sorted(p.name for p in folder.iterdir()) == [stale.name]  # ours deleted, the stale one kept
    assert rig.poll().activations == truth.total_activations  # an idle dump adds nothing
    stale.unlink()


def test_two_checkpoints_bracket_exactly_the_passes_of_one_answer(recording, folder, rig):
    rig.poll()
    chat(recording.url, "a story about dragons")  # before the answer
    t0 = rig.experts.checkpoint()
    chat(recording.url, "explain photosynthesis")  # the answer
    truth = dump_now(recording.url, folder)
    t1 = rig.experts.checkpoint()
    assert t0 is not None and t1 is not None and t1 >= t0
    assert rig.experts.hit_rate_between(t0, t1) == HitRate(truth.gpu_activations, truth.total_activations)
    assert rig.experts.latest().activations > truth.total_activations  # the window holds both chats


def test_a_ring_that_filled_up_between_two_dumps_is_reported(ring, ring_folder):
    rig = Rig(ring.url, ring_folder)
    rig.poll()
    chat(ring.url, max_tokens=30)  # a prefill and ~30 decode passes into a ring of 8
    snapshot = rig.poll()
    rig.close()
    assert rig.experts.points()[-1].passes == 8  # the older passes were overwritten
    assert any("--expert-distribution-recorder-buffer-size" in w for w in snapshot.warnings)


def test_dumps_that_never_appear_in_the_folder_turn_into_an_error_and_dumping_stops(recording, folder, tmp_path):
    before = set(folder.iterdir())
    with FaultProxy(recording.url) as proxy:
        rig = Rig(proxy.url, tmp_path / "elsewhere")
        rig.poll()
        states = [rig.poll().status for _ in range(3)]
        dumps_at_error = _recorder_calls(proxy).count("/dump_expert_distribution_record")
        later = [rig.poll().status for _ in range(3)]
        dumps_later = _recorder_calls(proxy).count("/dump_expert_distribution_record")
        rig.close()
    for left in set(folder.iterdir()) - before:  # what the engine wrote where the monitor did not look
        left.unlink()
    assert states[0] == "recording" and states[-1] == "error" and later == ["error"] * 3
    assert str(tmp_path / "elsewhere") in rig.experts.latest().reason
    assert dumps_later == dumps_at_error, "dumps that nobody reads must not pile up on the engine's host"


def test_an_engine_that_comes_back_gets_its_recorder_started_again(recording, proxy, rig):
    rig.poll()
    port = proxy.port
    proxy.close()
    assert rig.poll().status == "no_engine"
    with FaultProxy(recording.url, port) as back:
        assert rig.poll().status == "recording"
        assert _recorder_calls(back) == ["/start_expert_distribution_record"]
    assert _recorder_calls(proxy).count("/start_expert_distribution_record") == 1


def test_without_gpu_masks_the_placement_from_the_settings_stands_in(ring, ring_folder):
    assumed_mask = gpu_expert_mask(M3, sim_settings(ring.port))
    unknown, assumed = Rig(ring.url, ring_folder), Rig(ring.url, ring_folder, assumed=assumed_mask)
    unknown.poll()
    chat(ring.url, max_tokens=4)
    blind = unknown.poll()
    assumed.poll()  # restarts recording: a new window for this source
    chat(ring.url, max_tokens=4)
    truth = dump_now(ring.url, ring_folder, gpu_mask=assumed_mask)
    placed = assumed.poll()
    unknown.close()
    assumed.close()
    assert blind.activations > 0 and blind.hit_rate is None and blind.residency_source == "unknown"
    assert any("--record-kt-gpu-expert-distribution" in w for w in blind.warnings)
    assert placed.residency_source == "assumed"
    assert placed.hit_rate == HitRate(truth.gpu_activations, truth.total_activations)


def test_readers_do_not_wait_for_a_slow_dump(rig, proxy):
    rig.poll()
    proxy.delay_s["/dump_expert_distribution_record"] = 1.0
    polling = threading.Thread(target=rig.poll)
    polling.start()
    time.sleep(0.1)  # the dump is in flight
    started = time.monotonic()
    rig.experts.latest()
    rig.experts.points()
    waited = time.monotonic() - started
    polling.join(5)
    assert waited < 0.5  # the dump takes 1 s


def _dumps(proxy: FaultProxy) -> int:
    return proxy.paths().count("/dump_expert_distribution_record")


def _at_once(count: int, call, stagger_s: float = 0.0) -> list:
    results: list = [None] * count
    barrier = threading.Barrier(count)

    def run(i: int) -> None:
        barrier.wait()
        time.sleep(i * stagger_s)
        results[i] = call()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return results


def test_answers_that_ended_together_share_one_dump(recording, rig, proxy):
    rig.poll()
    chat(recording.url)
    ended = time.time()
    proxy.delay_s["/dump_expert_distribution_record"] = 0.3  # the callers overlap the dump
    boundaries = _at_once(16, lambda: rig.experts.checkpoint(after=ended))
    assert _dumps(proxy) == 1
    assert len(set(boundaries)) == 1 and boundaries[0] is not None
    assert rig.experts.hit_rate_between(ended - 60, boundaries[0]) == rig.experts.latest().hit_rate


def test_checkpoints_asked_at_once_cost_at_most_two_dumps_and_none_reads_a_dump_begun_before_it(rig, proxy):
    rig.poll()
    proxy.delay_s["/dump_expert_distribution_record"] = 0.3
    asked = []

    def checkpoint() -> float | None:
        asked.append(time.time())
        return rig.experts.checkpoint()

    first = threading.Thread(target=checkpoint)
    first.start()
    time.sleep(0.1)  # its dump is in flight: these asked after it began, so they need the next one
    boundaries = _at_once(16, checkpoint)
    first.join(10)
    assert _dumps(proxy) == 2  # was one each, in a row
    assert None not in boundaries and len(set(boundaries)) == 1
    assert min(asked[1:]) < boundaries[0]


def test_dumps_for_checkpoints_begin_a_gap_apart_so_answers_ending_in_a_row_join_one(recording, folder, proxy):
    rig = Rig(proxy.url, folder)
    rig.experts = ExpertSource(window_s=600, dump_every_s=5, timeout_s=10.0, top_n=3, checkpoint_gap_s=1.0)
    rig.experts.set_target(MonitorTarget(engine_url=proxy.url, recorder_dir=folder))
    try:
        rig.poll()
        boundaries = _at_once(8, rig.experts.checkpoint, stagger_s=0.03)  # answers ending 30 ms apart
    finally:
        rig.close()
    assert _dumps(proxy) == 2  # the first at once; the other seven joined the next, a second later
    assert None not in boundaries


def test_a_lone_answers_dump_begins_at_once_even_just_after_a_periodic_one(recording, folder, proxy):
    rig = Rig(proxy.url, folder)
    rig.experts = ExpertSource(window_s=600, dump_every_s=5, timeout_s=10.0, top_n=3, checkpoint_gap_s=1.0)
    rig.experts.set_target(MonitorTarget(engine_url=proxy.url, recorder_dir=folder))
    try:
        rig.poll()  # starts recording
        rig.poll()  # the periodic dump
        started = time.monotonic()
        boundary = rig.experts.checkpoint()
        waited = time.monotonic() - started
    finally:
        rig.close()
    assert boundary is not None and _dumps(proxy) == 2
    assert waited < 0.5, f"the answer's dump waited {waited:.2f} s for the periodic dump's gap"


def test_an_unwatched_sampler_still_dumps_the_recorder_on_time(recording, folder):
    config = SamplerConfig(interval_s=0.05, expert_dump_every_s=0.2, unwatched_interval_s=5.0, watch_linger_s=0.1)
    with FaultProxy(recording.url) as proxy, Sampler(MonitorTarget(engine_url=proxy.url, recorder_dir=folder), config):
        time.sleep(0.5)  # nobody reads it: the linger has passed
        before, loads_before = _dumps(proxy), proxy.paths().count("/v1/loads")
        time.sleep(1.2)
        dumped, loads = _dumps(proxy) - before, proxy.paths().count("/v1/loads") - loads_before
    assert 3 <= dumped <= 8  # every 0.2 s, while /v1/loads is read no more often than that
    # /v1/loads follows the dumps' pace, not the watched one (every 0.05 s: 24 reads); a busy host slows the dumps,
    # so the two are not held to each other read for read (7 reads to 5 dumps on a loaded CI run)
    assert loads <= 1.2 / config.interval_s / 2


def test_a_dump_that_timed_out_and_was_never_read_is_deleted_once_stale_and_a_folder_left_is_swept(
        recording, folder, tmp_path):
    """The dump call times out (the engine is busy saving), the engine goes away and comes back before the next
    poll: its files land in the folder before recording starts again, so no poll reads them (9 files, 88 MB)."""
    before = {p.name for p in folder.iterdir()}
    with FaultProxy(recording.url) as proxy:
        experts = ExpertSource(window_s=600, dump_every_s=5, timeout_s=0.5, stale_after_s=1.0)
        engine_source = EngineSource(timeout_s=5.0, slow_after_s=2.0)
        target = MonitorTarget(engine_url=proxy.url, recorder_dir=folder)
        engine_source.set_target(target)
        experts.set_target(target)

        def poll() -> str:
            return experts.poll(engine_source.sample(), engine_source.epoch).status

        try:
            assert poll() == "recording"
            proxy.delay_s["/dump_expert_distribution_record"] = 1.5
            assert poll() == "recording" and "the last dump failed" in experts.latest().warnings[0]
            landed = until_dumps(folder, before)
            engine_source.set_target(MonitorTarget())  # the engine went away ...
            assert poll() == "no_engine"
            proxy.delay_s.clear()
            engine_source.set_target(target)  # ... and came back: recording starts afresh
            assert poll() == "recording" and landed <= {p.name for p in folder.iterdir()}
            time.sleep(1.2)
            assert poll() == "recording"
            assert not landed & {p.name for p in folder.iterdir()}, "the timed-out dump is deleted once stale"
            proxy.delay_s["/dump_expert_distribution_record"] = 1.5
            poll()  # a dump in flight when the monitor stops watching the folder (the engine stopped)
            until_dumps(folder, before)
            experts.set_target(MonitorTarget())
            assert {p.name for p in folder.iterdir()} <= before
        finally:
            engine_source.close()
            experts.close()


def until_dumps(folder, before: set[str]) -> set[str]:
    """The dump files that appear in `folder` (besides `before`), once a stat and a mask file are there."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        new = {p.name for p in folder.iterdir()} - before
        if len(new) >= 2:
            return new
        time.sleep(0.05)
    raise AssertionError("the engine wrote no dump")
