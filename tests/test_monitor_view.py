"""The Monitor tab's rendering and its per-session refresh, without a browser (test_browser_monitor.py has one)."""

from __future__ import annotations

import time

import gradio as gr
import numpy as np
import pytest

from launch.model_config import load_model_shape
from launch.supervisor import EngineState
from m3ui.access import AccessPolicy
from m3ui.engine_link import EngineStatus
from m3ui.experts.hit_rate import HitRate, coldest_gpu_experts, hottest_cpu_experts, layer_hit_rates
from m3ui.experts.window import HitRatePoint
from m3ui.monitor.cpu import CpuPoint, CpuSource
from m3ui.monitor.engine import EngineSnapshot
from m3ui.monitor.experts import ExpertSnapshot
from m3ui.monitor.gpu import GpuSample, GpuSnapshot
from m3ui.monitor.processes import ProcessTreeSample
from m3ui.monitor.target import KtThreads
from m3ui.services import AppServices
from m3ui.ui.monitor import frames
from m3ui.ui.monitor.engine_html import engine_state, headline
from m3ui.ui.monitor.experts_html import experts_panel, rankings_panel
from m3ui.ui.monitor.format import pct
from m3ui.ui.monitor.machine_html import cpu_panel, gpu_panel
from m3ui.ui.monitor.view import Seen, build_monitor_tab, refresh

M3 = load_model_shape(None)
GIB = 1 << 30


def _recording_snapshot() -> ExpertSnapshot:
    """M3-shaped random routing (the hardest case for PNG), experts 0..23 of each MoE layer on the GPU."""
    counts = np.zeros((M3.num_layers, M3.num_routed_experts), dtype=np.int64)
    moe = list(M3.moe_layer_ids)
    counts[moe] = np.random.default_rng(0).integers(0, 5000, (len(moe), M3.num_routed_experts))
    residency = np.zeros(counts.shape, dtype=bool)
    residency[moe, :24] = True
    hits = (counts * residency).sum(axis=1)
    return ExpertSnapshot(
        time=time.time(), status="recording", window_s=600, activations=int(counts.sum()),
        hit_rate=HitRate(int(hits.sum()), int(counts.sum())), layer_hit_rates=layer_hit_rates(hits, counts.sum(axis=1)),
        residency_source="recorded", hottest_cpu=hottest_cpu_experts(counts, residency),
        coldest_gpu=coldest_gpu_experts(counts, residency), counts=counts, residency=residency,
    )


def _status(state: EngineState = EngineState.READY, **changes: object) -> EngineStatus:
    values = dict(mode="launched", state=state, ready=state is EngineState.READY, simulated=False,
                  phase_detail="ready", progress=1.0, url="http://127.0.0.1:30000", model="MiniMax-M3")
    return EngineStatus(**{**values, **changes})


def test_a_heatmap_refresh_is_a_small_data_url_image_not_thousands_of_svg_nodes():
    snapshot = _recording_snapshot()
    html = experts_panel(snapshot) + rankings_panel(snapshot)
    assert html.count("data:image/png;base64,") == 1 and "<svg" not in html and "<rect" not in html
    assert len(html) < 25_000
    assert f'data-layers="{M3.num_layers}" data-experts="{M3.num_routed_experts}"' in html


def test_the_heatmap_comes_with_the_hit_rate_per_layer_and_the_experts_worth_moving():
    snapshot = _recording_snapshot()
    html = experts_panel(snapshot)
    dense = M3.num_layers - M3.num_moe_layers
    assert html.count(": idle\"") == dense
    for layer in M3.moe_layer_ids:
        assert f"layer {layer}: {pct(snapshot.layer_hit_rates[layer], 1)}" in html
    rankings = rankings_panel(snapshot)
    assert "Hottest CPU-resident experts" in rankings and "Coldest GPU-resident experts" in rankings
    assert rankings.count("<tr>") == 1 + 10 + 1 + 10  # two tables: header and the top 10


@pytest.mark.parametrize("status", ["pending", "no_engine", "disabled", "unsupported_mode", "no_local_folder", "error"])
def test_every_state_but_recording_explains_itself_instead_of_a_heatmap(status):
    snapshot = ExpertSnapshot(time.time(), status, reason="Start the engine with <--flag> stat")
    html = experts_panel(snapshot)
    assert "Start the engine with &lt;--flag&gt; stat" in html and "<img" not in html
    assert rankings_panel(snapshot) == ""
    assert headline_tile_value(snapshot) == "–"


def headline_tile_value(experts: ExpertSnapshot) -> str:
    snapshot = _monitor_snapshot(experts=experts)
    html = headline(snapshot, _status())
    start = html.index('m3-kpi-value">') + len('m3-kpi-value">')
    return html[start:html.index("<", start)]


def _monitor_snapshot(**parts: object):
    from m3ui.monitor.sampler import MonitorSnapshot

    now = time.time()
    values = dict(gpu=GpuSnapshot(now, "no_gpu", reason="no NVIDIA GPU: no driver"), cpu=CpuSource().sample(
        ProcessTreeSample("not_configured")), engine=EngineSnapshot(now, "not_configured", "no engine"),
        experts=ExpertSnapshot(now, "no_engine", "no engine"))
    return MonitorSnapshot(**{**values, **parts})


def test_the_headline_leads_with_the_gpu_hit_rate():
    snapshot = _recording_snapshot()
    assert headline_tile_value(snapshot) == pct(snapshot.hit_rate.rate, 1)


def test_two_gpus_show_load_memory_with_the_engine_share_power_and_unknown_figures_as_such():
    gpus = (GpuSample(0, "NVIDIA H200", 87.0, 120 * GIB, 140 * GIB, 450.0, 700.0, 61.0, 2e9, 5e8, 110 * GIB),
            GpuSample(1, "NVIDIA H200", None, 10 * GIB, 140 * GIB))
    html = gpu_panel(GpuSnapshot(time.time(), "ok", gpus), simulated=False)
    assert html.count('class="m3-card"') == 2 and "NVIDIA H200" in html
    assert "120.0 GiB / 140.0 GiB · engine 110.0 GiB" in html and "450 / 700 W" in html
    assert "rx 500.0 MB/s · tx 2.0 GB/s" in html and "61 °C" in html
    assert html.count("not reported") == 1 and "–" in html  # GPU 1: no PCIe counters, no load figure
    assert "130.0 / 280.0 GiB" in headline(_monitor_snapshot(gpu=GpuSnapshot(time.time(), "ok", gpus)), _status())


def test_no_nvidia_gpu_is_an_empty_state_with_the_reason():
    snapshot = GpuSnapshot(time.time(), "no_gpu", reason="no NVIDIA GPU: libnvidia-ml.so.1 is not installed")
    html = gpu_panel(snapshot, simulated=True)
    assert "No NVIDIA GPU on this machine." in html and "libnvidia-ml.so.1" in html and "m3-card" not in html
    assert "no NVIDIA GPU here" in headline(_monitor_snapshot(gpu=snapshot), _status())


def test_cores_beyond_cpuinfer_or_outside_the_numa_nodes_are_marked():
    source = CpuSource()
    if not any(n.node is not None for n in source.sample(ProcessTreeSample("not_configured")).nodes):
        pytest.skip("this machine does not tell its NUMA layout")
    first_node = source.sample(ProcessTreeSample("not_configured")).nodes[0]
    if len(first_node.cores) < 2:
        pytest.skip("needs a NUMA node of two CPUs")
    source.set_kt_threads(KtThreads(cpuinfer=1, threadpool_count=1, numa_nodes=(first_node.node,)))
    html = cpu_panel(source.sample(ProcessTreeSample("not_configured")), simulated=False)
    assert html.count('class="k l') == 1 and 'class="s l' in html
    assert "a CPU expert thread should run here" in html and "spare: more cores than expert threads" in html
    assert "--kt" not in html  # the legend speaks words, not flags
    source.set_kt_threads(KtThreads(cpuinfer=1, threadpool_count=1, numa_nodes=(99,)))
    misplaced = cpu_panel(source.sample(ProcessTreeSample("not_configured")), simulated=False)
    assert 'class="k l' not in misplaced and 'class="o l' in misplaced
    assert "NUMA node 99 does not exist here" in misplaced


def test_while_the_engine_starts_the_state_line_shows_the_supervisors_progress():
    down = EngineSnapshot(time.time(), "unreachable", "cannot reach http://127.0.0.1:30000: connection refused")
    starting = _status(EngineState.STARTING, phase_detail="loading weights", progress=0.4)
    assert engine_state(down, starting) == ("starting", "Starting (40%) — loading weights")
    assert engine_state(down, _status()) == ("down", f"Unreachable — {down.reason}")
    attached = _status(EngineState.STARTING, mode="attached", phase_detail="waiting for http://gpu-box:30000")
    assert engine_state(down, attached)[0] == "down"  # someone else's engine: not ours to be loading
    assert engine_state(EngineSnapshot(time.time(), "slow", "/v1/loads took 3.0 s"), _status())[0] == "slow"


def test_history_charts_are_thinned_to_their_row_budget_and_no_history_is_no_chart():
    now = time.time()
    points = [CpuPoint(now - 600 + i, 50.0, (40.0, 60.0, 45.0, 55.0), 90.0, 800.0, GIB, 4 * GIB) for i in range(600)]
    chart = frames.cpu_load(points, ["node 0", "node 1", "node 2", "node 3"])
    assert set(chart["series"]) == {"all CPUs", "node 0", "node 1", "node 2", "node 3", "kt cores"}
    assert len(chart) <= frames.ROW_BUDGET + 6 and chart["time"].max() == chart["time"].max()
    assert chart["time"].iloc[-1].timestamp() == pytest.approx(points[-1].time, abs=1e-3)  # the newest is kept
    assert frames.cpu_load([], ["node 0"]) is None and frames.engine_throughput([]) is None
    idle = [HitRatePoint(now, None, 0, 0)]
    assert frames.expert_hit_history(idle) is None  # nothing routed: no point to draw


@pytest.fixture
def services(tmp_path):
    app = AppServices.create(tmp_path / "data", AccessPolicy("127.0.0.1", None))
    yield app
    app.close()


def test_a_session_refresh_reads_the_cached_snapshot_and_resends_only_what_changed(services):
    deadline = time.monotonic() + 10
    while services.monitor.sampler.latest().cpu.status != "ok":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    services.monitor.stop()  # the snapshot stays as it is: what changes between refreshes is the session's
    with gr.Blocks():
        panels = build_monitor_tab(services)
    outputs = panels.outputs()
    expert_panel, charts = slice(4, 8), slice(8, 15)
    assert outputs[expert_panel] == [panels.experts, panels.expert_details, panels.rankings, panels.placement]
    assert outputs[charts.start] is panels.hit_history and outputs[charts.stop - 1] is panels.cpu_load
    skip = gr.skip()
    first = refresh(services, Seen())
    assert len(first) == len(outputs) and isinstance(first[-1], Seen)
    assert "No engine" in first[0] and "no engine is answering" in first[4]
    assert first[charts] != (skip,) * 7  # the first paint brings everything known, the expert panel included
    second = refresh(services, first[-1])
    assert "No engine" in second[0]  # the live figures come every tick
    # again (FIRST_PAINT): the expert panel and the charts, in case the first landed while the tab mounted
    assert "no engine is answering" in second[4]
    assert second[charts] != (skip,) * 7 and second[charts.start + 1] is None  # no engine: no throughput chart
    third = refresh(services, second[-1])
    assert third[expert_panel] == (skip,) * 4  # no new expert snapshot
    assert third[charts] == (skip,) * 7  # charts not due again yet
