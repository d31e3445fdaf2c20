"""Fleet settings: ports, GPUs and NUMA nodes handed out without collisions, every collision and every
disagreement between the nodes of a multi-node engine refused before anything starts, each node's exact command,
and the fleet file read strictly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from launch.command import Engine
from launch.fleet.commands import fleet_preview, router_command, worker_commands
from launch.fleet.fleet_file import FleetFileError, load_fleet_file
from launch.fleet.router_settings import RouterSettings, RouterSettingsError, router_from_mapping
from launch.fleet.spec import GPU_ENV, AttachedWorker, Fleet, LaunchedWorker, MultiNode, replicate
from launch.fleet.validation import validate_fleet
from launch.model_config import BUNDLED_M3_CONFIG
from launch.presets import single_gpu
from launch.sglang_flags import SGLANG_FLAGS

SGLANG = Engine("sglang")


def checks(fleet: Fleet) -> set[str]:
    return {f.check for f in validate_fleet(fleet) if f.is_error}


def test_replicated_real_engines_get_distinct_ports_gpus_and_numa_nodes_on_loopback() -> None:
    fleet = replicate(single_gpu().replace(tp_size=2), 3, RouterSettings(port=31000), SGLANG)
    ports = [w.settings.port for w in fleet.workers]
    assert ports == [31010, 31011, 31012]
    assert [w.gpus for w in fleet.workers] == [(0, 1), (2, 3), (4, 5)]
    assert [w.settings.kt_numa_nodes for w in fleet.workers] == [(0, 1), (2, 3), (4, 5)]
    assert {w.settings.kt_cpuinfer for w in fleet.workers} == {single_gpu().kt_cpuinfer // 3}
    assert {w.settings.host for w in fleet.workers} == {"127.0.0.1"}
    assert checks(fleet) == set()
    envs = [dict(worker_commands(w, SGLANG)[0].command.env) for w in fleet.workers]
    assert [e[GPU_ENV] for e in envs] == ["0,1", "2,3", "4,5"]


def test_simulated_workers_are_not_pinned_to_devices() -> None:
    fleet = replicate(single_gpu(), 2, RouterSettings(), Engine("sim"))
    assert all(w.gpus == () and w.settings.kt_numa_nodes is None for w in fleet.workers)


@pytest.mark.parametrize(("router", "first_port", "message"), [
    (RouterSettings(port=30010), 30010, "worker 1 and the router both use port 30010"),
    (RouterSettings(port=30000, prometheus_port=30011), None, "worker 2 and the router's Prometheus exporter"),
    (RouterSettings(port=30000), 30001, "worker 1 and the router's Prometheus exporter both use port 30001"),
])
def test_ports_that_collide_on_one_host_are_refused(router: RouterSettings, first_port: int | None,
                                                    message: str) -> None:
    fleet = replicate(single_gpu(), 2, router, Engine("sim"), first_port)
    findings = validate_fleet(fleet)
    assert {f.check for f in findings} == {"port_collision"}
    assert any(message in f.message for f in findings)


def test_shared_gpus_and_numa_nodes_are_refused_on_one_host_but_not_across_hosts() -> None:
    a = LaunchedWorker(single_gpu().replace(port=30010, kt_numa_nodes=(0,)), gpus=(0,))
    b = LaunchedWorker(single_gpu().replace(port=30011, kt_numa_nodes=(0,)), gpus=(0,))
    assert checks(Fleet(RouterSettings(), (a, b), SGLANG)) == {"gpu_collision", "numa_collision"}
    remote = LaunchedWorker(b.settings, machine="gpu-b", gpus=(0,))
    assert checks(Fleet(RouterSettings(), (a, remote), SGLANG)) == set()
    wrong_count = LaunchedWorker(single_gpu().replace(port=30010, tp_size=2), gpus=(0,))
    assert checks(Fleet(RouterSettings(), (wrong_count,), SGLANG)) == {"gpus"}


@pytest.mark.parametrize(("url", "ok"), [
    ("http://10.0.0.2:30000", True), ("https://gpu-a:443/", True), ("10.0.0.2:30000", False),
    ("http://10.0.0.2", False), ("http://user:pw@10.0.0.2:30000", False), ("http://h:1/v1", False),
    ("http://h:99999", False), ("ftp://h:21", False),
])
def test_attached_urls_must_be_plain_http_host_port(url: str, ok: bool) -> None:
    assert (checks(Fleet(RouterSettings(), (AttachedWorker(url),))) == set()) is ok


def test_a_fleet_serves_one_model_under_distinct_urls_and_power_of_two_needs_two_workers() -> None:
    one = LaunchedWorker(single_gpu().replace(host="127.0.0.1", port=30010))
    twin = AttachedWorker("http://127.0.0.1:30010")
    other = LaunchedWorker(single_gpu().replace(port=30011, served_model_name="Other"))
    assert checks(Fleet(RouterSettings(), (one, twin))) == {"worker_url"}
    assert checks(Fleet(RouterSettings(), (one, other))) == {"one_model"}
    assert checks(Fleet(RouterSettings(policy="power_of_two"), (one,))) == {"policy"}
    assert checks(Fleet(RouterSettings(), ())) == {"no_workers"}
    keyed = LaunchedWorker(single_gpu().replace(port=30010, api_key="k"))
    assert checks(Fleet(RouterSettings(), (keyed,))) == {"worker_api_key"}


def multi(tp: int = 16, hosts: tuple[str, ...] = ("gpu-c", "gpu-d"), addr: str = "gpu-c:5000",
          gpus: tuple[int, ...] = ()) -> Fleet:
    worker = LaunchedWorker(single_gpu().replace(tp_size=tp, port=30000), gpus=gpus, nodes=MultiNode(hosts, addr))
    return Fleet(RouterSettings(), (worker,), SGLANG)


def test_each_node_of_a_multi_node_engine_runs_the_same_command_but_for_its_rank() -> None:
    fleet = multi(gpus=tuple(range(8)))
    assert checks(fleet) == set()
    (worker,) = fleet.workers
    nodes = worker_commands(worker, SGLANG)
    assert [(n.machine, n.rank) for n in nodes] == [("gpu-c", 0), ("gpu-d", 1)]
    base = nodes[0].command.argv[:-6]
    for rank, node in enumerate(nodes):
        assert node.command.argv == (*base, "--nnodes", "2", "--node-rank", str(rank), "--dist-init-addr",
                                     "gpu-c:5000")
        assert dict(node.command.env)[GPU_ENV] == "0,1,2,3,4,5,6,7"
    assert {"--nnodes", "--node-rank", "--dist-init-addr"} <= SGLANG_FLAGS
    assert worker.url == "http://gpu-c:30000"  # the router talks to rank 0
    assert "--worker-urls http://gpu-c:30000" in router_command(fleet).shell_text()
    preview = fleet_preview(fleet)
    assert "# worker 1, node 0 of 2 on gpu-c" in preview and "# worker 1, node 1 of 2 on gpu-d" in preview


@pytest.mark.parametrize(("fleet", "check"), [
    (multi(tp=12, hosts=("a", "b", "c", "d", "e")), "nnodes"),
    (multi(hosts=("gpu-c",)), "nnodes"),
    (multi(hosts=("gpu-c", "gpu-c")), "node_hosts"),
    (multi(addr="gpu-d:5000"), "dist_init_addr"),
    (multi(addr="gpu-c"), "dist_init_addr"),
    (multi(addr="gpu-c:30000"), "port_collision"),
    (multi(gpus=(0, 1)), "gpus"),
])
def test_what_the_nodes_must_agree_on_is_checked(fleet: Fleet, check: str) -> None:
    assert check in checks(fleet)


def test_router_settings_refuse_unknown_names_bad_types_ranges_and_choices() -> None:
    assert router_from_mapping({"port": "31000", "disable_retries": "true"}).port == 31000
    for bad in ({"prot": 1}, {"port": "x"}, {"port": 0}, {"policy": "fastest"}, {"port": True},
                {"health_check_interval_secs": 1.5}):
        with pytest.raises(RouterSettingsError):
            router_from_mapping(bad)


def write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "fleet.json"
    path.write_text(json.dumps(data))
    return path


def test_a_fleet_file_describes_local_remote_multi_node_and_attached_workers(tmp_path: Path) -> None:
    fleet = load_fleet_file(write(tmp_path, {
        "engine": "sglang", "router": {"port": 31000, "policy": "round_robin"},
        "base": {"preset": "single-gpu", "model_path": "/models/M3", "set": {"kt_cpuinfer": 60}},
        "workers": [{"port": 31010, "gpus": [0]}, {"machine": "gpu-b", "port": 30000, "gpus": [0]},
                    {"nodes": ["gpu-c", "gpu-d"], "dist_init_addr": "gpu-c:5000", "port": 30000,
                     "set": {"tp_size": 16}},
                    {"url": "http://10.0.0.9:30000"}]}))
    assert fleet.router.port == 31000 and fleet.router.policy == "round_robin"
    assert fleet.worker_urls == ("http://127.0.0.1:31010", "http://gpu-b:30000",
                                 "http://gpu-c:30000", "http://10.0.0.9:30000")
    assert fleet.workers[0].settings.model_path == "/models/M3" and fleet.workers[0].settings.kt_cpuinfer == 60
    assert fleet.workers[2].settings.tp_size == 16
    assert checks(fleet) == set()


@pytest.mark.parametrize(("data", "message"), [
    ({"workers": []}, "workers must be a non-empty list"),
    ({"workers": [{"url": "http://h:1", "port": 2}]}, "an attached worker has only a url"),
    ({"workers": [{"prot": 1}]}, "workers[1]: unknown key(s) prot"),
    ({"workers": [{"gpus": [-1]}]}, "workers[1]: gpus: expected a whole number"),
    ({"workers": [{"set": {"tp_size": "two"}}]}, "workers[1]: --tp-size"),
    ({"router": {"policy": "x"}, "workers": [{}]}, "router: --policy"),
    ({"engine": "vllm", "workers": [{}]}, "engine must be"),
    ({"workers": [{"dist_init_addr": "a:1"}]}, "belongs to a multi-node worker"),
    ({"base": {"preset": "tiny"}, "workers": [{}]}, "unknown preset"),
    ([], "expected an object"),
])
def test_a_bad_fleet_file_is_refused_saying_where(tmp_path: Path, data: object, message: str) -> None:
    with pytest.raises(FleetFileError) as caught:
        load_fleet_file(write(tmp_path, data))
    assert message in str(caught.value)


def test_a_fleet_file_that_is_missing_not_json_or_huge_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FleetFileError, match="no such file"):
        load_fleet_file(tmp_path / "none.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(FleetFileError, match="not JSON"):
        load_fleet_file(tmp_path / "bad.json")
    (tmp_path / "big.json").write_text(" " * (2 << 20))
    with pytest.raises(FleetFileError, match="larger than"):
        load_fleet_file(tmp_path / "big.json")


def test_launched_workers_that_would_answer_differently_are_warned_about() -> None:
    one = LaunchedWorker(single_gpu().replace(port=30010))
    other = LaunchedWorker(single_gpu().replace(port=30011, reasoning_parser=None))
    (finding,) = validate_fleet(Fleet(RouterSettings(), (one, other)))
    assert (finding.level, finding.check) == ("warning", "workers_differ") and "reasoning_parser" in finding.message


def test_a_simulated_fleet_file_without_a_model_uses_the_bundled_m3_config(tmp_path: Path) -> None:
    fleet = load_fleet_file(write(tmp_path, {"engine": "sim", "base": {"preset": "single-gpu"},
                                             "workers": [{"port": 31010}]}))
    (worker,) = fleet.workers
    assert worker.settings.model_path == worker.settings.kt_weight_path == str(BUNDLED_M3_CONFIG.parent)


def test_kt_workers_that_oversubscribe_the_hosts_cores_are_warned_about() -> None:
    both = tuple(LaunchedWorker(single_gpu().replace(port=p, kt_cpuinfer=60)) for p in (30010, 30011))
    (finding,) = validate_fleet(Fleet(RouterSettings(), both), physical_cores=64)
    assert (finding.level, finding.check) == ("warning", "cpu_share") and "120 CPU-expert threads" in finding.message
    assert validate_fleet(Fleet(RouterSettings(), both), physical_cores=128) == []
    assert validate_fleet(Fleet(RouterSettings(), both)) == []  # cores unknown: nothing to say
