"""The machine's own panels: kt-kernel core roles, the engine's process tree, the CPU and GPU sources."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

import pynvml
import pytest

from launch.hardware import NumaNode
from launch.settings import LaunchSettings
from m3ui.monitor.cpu import CpuSource
from m3ui.monitor.cpu_layout import plan_core_roles
from m3ui.monitor.gpu import GpuSource
from m3ui.monitor.processes import EngineProcesses
from m3ui.monitor.target import KtThreads

# two sockets of 4 cores with hyper-threading: CPU n and n + 8 share a core
NODES = (NumaNode(0, (0, 1, 2, 3, 8, 9, 10, 11)), NumaNode(1, (4, 5, 6, 7, 12, 13, 14, 15)))
SIBLINGS = {cpu: (cpu % 8, cpu % 8 + 8) for cpu in range(16)}


def _roles(layout, cpus):
    return [layout.roles[cpu] for cpu in cpus]


def test_kt_workers_are_expected_on_the_first_cores_of_each_pools_node():
    layout = plan_core_roles(NODES, SIBLINGS, KtThreads(cpuinfer=5, threadpool_count=2))
    assert _roles(layout, (0, 1, 2, 3, 8)) == ["kt", "kt", "kt", "spare", "spare"]  # pool 0 takes 3 threads
    assert _roles(layout, (4, 5, 6, 12)) == ["kt", "kt", "spare", "spare"]
    assert dict(layout.pool_by_node) == {0: (0,), 1: (1,)} and layout.notes == ()


def test_cores_of_a_node_no_pool_uses_are_outside():
    layout = plan_core_roles(NODES, SIBLINGS, KtThreads(cpuinfer=2, threadpool_count=1, numa_nodes=(1,)))
    assert set(_roles(layout, NODES[0].cpus)) == {"outside"}
    assert _roles(layout, (4, 5, 6)) == ["kt", "kt", "spare"]


def test_pools_that_cannot_be_placed_are_noted():
    missing = plan_core_roles(NODES, SIBLINGS, KtThreads(cpuinfer=4, threadpool_count=2, numa_nodes=(0, 3)))
    assert missing.notes == ("pool 1: NUMA node 3 does not exist here",)
    crowded = plan_core_roles(NODES, SIBLINGS, KtThreads(cpuinfer=10, threadpool_count=1))
    assert set(_roles(crowded, NODES[0].cpus)) == {"kt"}  # hyper-threads after the cores, then out of CPUs
    assert "only 8 CPUs left" in crowded.notes[0]


def test_without_kt_settings_every_core_is_unassigned():
    layout = plan_core_roles(NODES, SIBLINGS, None)
    assert set(layout.roles.values()) == {"unassigned"}


def test_kt_threads_come_from_the_launch_settings_only_when_kt_is_active():
    assert KtThreads.from_settings(LaunchSettings(kt_cpuinfer=8)) is None  # no weights: KT off
    active = LaunchSettings(kt_weight_path="/w", kt_num_gpu_experts=4, kt_cpuinfer=7, kt_threadpool_count=2,
                            kt_numa_nodes=(1, 0))
    kt = KtThreads.from_settings(active)
    assert kt.pool_nodes() == (1, 0) and kt.pool_threads() == (4, 3)


BUSY_ENGINE = """
import subprocess, sys, threading
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
def spin():
    while True:
        pass
for _ in range(2):
    threading.Thread(target=spin, daemon=True).start()
print(child.pid, flush=True)
sys.stdin.read()
child.kill()
"""


@pytest.fixture
def busy_engine():
    proc = subprocess.Popen([sys.executable, "-c", BUSY_ENGINE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    grandchild = int(proc.stdout.readline())
    yield proc, grandchild
    proc.kill()
    proc.wait(5)
    with contextlib.suppress(ProcessLookupError):
        os.kill(grandchild, signal.SIGKILL)


def test_the_engine_tree_sums_cpu_memory_and_threads_of_all_its_processes_and_notices_when_it_is_gone(busy_engine):
    proc, grandchild = busy_engine
    processes = EngineProcesses(relist_s=0.0)
    processes.set_root(proc.pid)
    processes.sample()  # baseline for cpu_percent
    cpu = CpuSource()
    time.sleep(0.5)
    sample = processes.sample()
    assert sample.status == "ok" and sample.pids == {proc.pid, grandchild}
    assert sample.cpu_percent > 5 and sample.threads >= 4 and sample.rss_bytes > 1_000_000  # >5: CI may be busy
    snapshot = cpu.sample(sample)
    assert snapshot.engine is sample and snapshot.status == "ok"
    assert snapshot.total_percent > 20 and max(c.percent for n in snapshot.nodes for c in n.cores) > 40
    assert {c.cpu for n in snapshot.nodes for c in n.cores} and snapshot.ram_total_bytes >= snapshot.ram_used_bytes
    proc.kill()
    proc.wait(5)
    gone = processes.sample()
    assert gone.status == "gone" and gone.pids == frozenset() and str(proc.pid) in gone.reason


def test_without_an_engine_process_the_tree_is_not_configured():
    assert EngineProcesses().sample().status == "not_configured"


def _nvml_available() -> bool:
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return False
    pynvml.nvmlShutdown()
    return True


@pytest.mark.skipif(_nvml_available(), reason="this machine has an NVIDIA driver")
def test_with_no_nvidia_gpu_the_gpu_panel_is_an_empty_state_with_the_reason():
    source = GpuSource()
    first, second = source.sample(), source.sample(frozenset({1}))
    assert first.status == second.status == "no_gpu" and first.gpus == ()
    assert "no NVIDIA GPU" in first.reason
    source.close()


@pytest.mark.skipif(not _nvml_available(), reason="no NVIDIA driver here")
def test_on_an_nvidia_machine_every_gpu_has_a_name_and_memory_figures():
    source = GpuSource()
    snapshot = source.sample()
    assert snapshot.status == "ok" and snapshot.gpus
    assert all(g.name and g.memory_total_bytes for g in snapshot.gpus)
    source.close()
