"""The host side of the speed model replays the published measurements it was fitted to, and the roofline and
the simulated engine's configuration read the same model."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from launch.host_file import HostFigures, HostFileError, host_from_mapping, load_host_file
from launch.host_speed import CpuKnobs, all_cpu_decode_tps, bandwidth_share, host_rates
from launch.model_config import load_model_shape
from launch.presets import single_gpu, tp8_hybrid
from launch.roofline import roofline
from launch.sim.config import load_sim_config

HOSTS = Path(__file__).parent / "data" / "hosts"
SHAPE = load_model_shape(None)


def host(physical: int, logical: int, nodes: int, read_gbs: float) -> HostFigures:
    return host_from_mapping({
        "cpu": {"physical_cores": physical, "logical_cores": logical, "numa_nodes": nodes, "isa": [],
                "kt_backend": "avx512_vnni"},
        "memory": {"total_gb": 512, "read_gbs": read_gbs, "per_node_read_gbs": [read_gbs / nodes] * nodes},
    })


def speeds(h: HostFigures, threads: list[int], pools: int = 1) -> dict[int, float]:
    return {t: bandwidth_share(h, CpuKnobs(t, pools)) for t in threads}


def test_806_four_sockets_best_at_56_threads_and_more_is_slower():
    # 4x Xeon 8280 (4x28 cores), 4 NUMA nodes, DDR4: cpu_infer 46, 56, 65, 75, 112; 56 best at 4.1 tok/s
    s = speeds(host(112, 224, 4, 400), [46, 56, 65, 75, 112])
    assert max(s, key=s.get) == 56
    assert s[56] > s[65] > s[75] > s[112]


def test_219_two_nodes_112_56_24_threads():
    # 2-node, 112-thread Xeon: cpu_infer 112, 56, 24 gave 0.6, 1.7, 1.87 tok/s
    s = speeds(host(56, 112, 2, 180), [112, 56, 24])
    assert s[112] / s[24] == pytest.approx(0.6 / 1.87, rel=0.15)
    assert s[56] / s[24] == pytest.approx(1.7 / 1.87, rel=0.05)


def test_726_oversubscription_is_catastrophic():
    # E5-2630 v4, 10 cores / 20 threads: cpu_infer 30 -> <0.1 tok/s, 18 -> 2.9 tok/s
    s = speeds(host(10, 20, 1, 55), [30, 18, 10])
    assert s[30] / s[18] < 0.1 / 2.9
    assert s[18] > 0.9 * s[10]  # 18 threads on 20 CPUs: no catastrophe (the advice: physical cores - 2)


def test_1816_hyperthreads_help_a_28_core_amx_part():
    # 28 -> 52 threads on a 28-core AMX part: 10.3 -> 11.8 tok/s
    s = speeds(host(28, 56, 1, 250), [28, 52])
    assert s[52] / s[28] == pytest.approx(11.8 / 10.3, rel=0.05)


def test_769_one_pool_per_socket():
    # NUMA-aware pools on 2 sockets: 5.2 -> 7.4 tok/s
    h = host(48, 96, 2, 200)
    assert bandwidth_share(h, CpuKnobs(48, 2)) / bandwidth_share(h, CpuKnobs(48, 1)) > 7.4 / 5.2 * 0.99


def test_roofline_breakdown_and_the_sim_play_the_same_model():
    h = load_host_file(HOSTS / "two-socket-h200.json")
    settings = single_gpu()
    result = roofline(SHAPE, settings, h)
    assert result.decode_tok_s["1"] < result.decode_tok_s["4"] < result.decode_tok_s["16"]
    assert result.gpu_experts_per_layer == 4
    # every token reads top-k experts in every MoE layer, on the CPU unless the expert is on the GPU
    per_expert = result.cpu_bytes_per_token / (SHAPE.experts_per_token * SHAPE.num_moe_layers * (1 - 4 / 128))
    assert per_expert == pytest.approx(3 * SHAPE.hidden_size * SHAPE.moe_intermediate_size * (1 + 4 / 32))
    sim = load_sim_config(1, {"M3UI_SIM_HOST": str(HOSTS / "two-socket-h200.json")}, settings=settings, shape=SHAPE)
    assert sim.gpu_mem_gb == 141 and sim.gpu_count == 1 and sim.ram_gb == 1536
    rates = host_rates(h, CpuKnobs(64, 2), 1)
    assert sim.decode_tps == pytest.approx(all_cpu_decode_tps(SHAPE, "mxfp8", rates))
    tp8 = roofline(SHAPE, tp8_hybrid(), load_host_file(HOSTS / "two-socket-8xh20.json"))
    assert tp8.rates.gpu_read_gbs == 8 * 4000 and tp8.gpu_experts_per_layer == 40


@pytest.mark.parametrize(("change", "field"), [
    (lambda d: d["cpu"].pop("physical_cores"), "cpu.physical_cores"),
    (lambda d: d["cpu"].update(logical_cores=-3), "cpu.logical_cores"),
    (lambda d: d["memory"].update(read_gbs=1e9), "memory.read_gbs"),
    (lambda d: d["memory"].update(per_node_read_gbs=[1.0]), "memory.per_node_read_gbs"),
    (lambda d: d["gpus"][0].update(memory_gb="lots"), "gpus[0].memory_gb"),
    (lambda d: d["cpu"].update(numa_nodes=99), "cpu.numa_nodes"),
])
def test_a_host_file_with_a_missing_or_absurd_field_is_refused_by_name(tmp_path, change, field):
    doc = json.loads((HOSTS / "two-socket-h200.json").read_text())
    change(doc)
    path = tmp_path / "host.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(HostFileError, match=field.replace("[", r"\[").replace("]", r"\]")):
        load_host_file(path)


def test_an_oversubscribed_launch_on_the_measured_h200_host_says_why_and_what_to_set():
    """The probe's JSON from the real H200 host (16 CPUs) with the seed's --kt-cpuinfer 64: the ceiling collapses,
    and the roofline says so first, with the setting that fits, instead of printing a decode ceiling of 0.0."""
    from launch.roofline import format_roofline

    measured = load_host_file(HOSTS / "h200-probe-measured.json")
    settings = single_gpu()
    result = roofline(SHAPE, settings, measured)
    assert result.warnings and "try --kt-cpuinfer 14" in result.warnings[0]
    text = format_roofline(result, settings)
    assert text.startswith("!!  --kt-cpuinfer 64") and "1 req 0.0," not in text
    fitted = roofline(SHAPE, replace(settings, kt_cpuinfer=14, kt_threadpool_count=1), measured)
    assert fitted.warnings == () and fitted.decode_tok_s["1"] > 1000 * result.decode_tok_s["1"]
