"""A stand-in for kt-kernel's detector and extension, for hosts where the real wheel cannot load (not CPython
3.11, or no AVX2): the same objects and calls as kt_kernel_ext, with a forward whose time depends only on the
(threads, pools) setting, so the choice is known. FAKE_KT_BEST="threads,pools" is its fastest setting;
FAKE_KT_NODES the NUMA nodes it accepts (a pool on another node is refused, as hwloc would)."""

import os
import time
import types

_BEST = tuple(int(v) for v in os.environ.get("FAKE_KT_BEST", "4,1").split(","))
_NODES = int(os.environ.get("FAKE_KT_NODES", "64"))
STEP_S = 0.02  # per step from the best; 46 threads against 48 is 1.7 steps, a pool off 4: far above timer noise and
# above the stalls of a loaded CI host (4 ms steps let a stalled best run lose to a pool count off by two)


class WorkerPoolConfig:
    subpool_count = 0
    subpool_numa_map: list = []
    subpool_thread_count: list = []


class CPUInfer:
    def __init__(self, config):
        absent = [n for n in config.subpool_numa_map if n >= _NODES]
        if absent:
            raise RuntimeError(f"NUMA node {absent[0]} does not exist")
        self.threads, self.pools = sum(config.subpool_thread_count), config.subpool_count
        self.backend_ = object()
        self._queue = []

    def submit(self, task):
        self._queue.append(task)

    def sync(self, allow_n_pending=0):
        while self._queue:
            self._queue.pop(0)(self)


class MOEConfig:
    def __init__(self, experts, top_k, hidden, intermediate, mask):
        self.quant_config = types.SimpleNamespace()


class AVX2MXFP8_MOE:
    def __init__(self, config):
        self.config = config

    def load_weights_task(self, physical_to_logical):
        return lambda cpu: None

    def forward_task(self, bsz, k, ids, weights, x, out, incremental=False):
        def run(cpu):
            steps = abs(cpu.threads - _BEST[0]) / max(1, _BEST[0]) * 40 + abs(cpu.pools - _BEST[1]) * 4
            time.sleep(STEP_S * (1 + steps))
        return run


moe = types.SimpleNamespace(MOEConfig=MOEConfig, AVX2MXFP8_MOE=AVX2MXFP8_MOE)


def initialize():
    ext = types.SimpleNamespace(WorkerPoolConfig=WorkerPoolConfig, CPUInfer=CPUInfer, moe=moe,
                                __cpu_variant__="avx2")
    return ext, "avx2"
