"""What a fleet is: the router's settings and its workers, each launched (here, on another host, or over several
hosts as one multi-node engine) or attached by URL.

A launched worker is engine settings plus where it runs: `machine` (None: this host, started and supervised
here; a name: its command is printed for that host), `gpus` (its CUDA_VISIBLE_DEVICES there) and, for one
engine spread over hosts, `nodes` (sglang's --nnodes/--node-rank/--dist-init-addr).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from launch.command import Engine
from launch.fleet.router_settings import RouterSettings
from launch.health import engine_url
from launch.settings import LaunchSettings

GPU_ENV = "CUDA_VISIBLE_DEVICES"


@dataclass(frozen=True)
class MultiNode:
    """One engine over several hosts: node rank r runs on hosts[r]; rank 0 serves HTTP and hosts the rendezvous."""

    hosts: tuple[str, ...]
    dist_init_addr: str  # host:port of rank 0's torch.distributed rendezvous

    @property
    def nnodes(self) -> int:
        return len(self.hosts)


@dataclass(frozen=True)
class LaunchedWorker:
    settings: LaunchSettings
    machine: str | None = None
    gpus: tuple[int, ...] = ()
    nodes: MultiNode | None = None

    @property
    def head(self) -> str | None:
        """The machine whose HTTP server the router talks to (rank 0 of a multi-node engine)."""
        return self.nodes.hosts[0] if self.nodes else self.machine

    @property
    def local(self) -> bool:
        return self.head is None

    @property
    def url(self) -> str:
        return engine_url(self.settings if self.head is None else self.settings.replace(host=self.head))

    def engine(self, base: Engine) -> Engine:
        """`base` with this worker's GPUs pinned (CUDA_VISIBLE_DEVICES), for its command wherever it runs."""
        pinned = ((GPU_ENV, ",".join(map(str, self.gpus))),) if self.gpus else ()
        return replace(base, env=base.env + pinned)


@dataclass(frozen=True)
class AttachedWorker:
    url: str


Worker = LaunchedWorker | AttachedWorker


@dataclass(frozen=True)
class Fleet:
    router: RouterSettings
    workers: tuple[Worker, ...]
    engine: Engine = Engine()

    @property
    def worker_urls(self) -> tuple[str, ...]:
        return tuple(w.url.rstrip("/") for w in self.workers)

    @property
    def local_workers(self) -> tuple[LaunchedWorker, ...]:
        return tuple(w for w in self.workers if isinstance(w, LaunchedWorker) and w.local)


def replicate(base: LaunchSettings, count: int, router: RouterSettings, engine: Engine,
              first_port: int | None = None) -> Fleet:
    """`count` engines on this host from one settings, on loopback: distinct ports (from the router's port + 10 unless
    `first_port`), and for the real engine distinct GPUs (tp_size each) and, with KT active, distinct NUMA
    nodes (kt_threadpool_count each) and an equal share of the CPU-expert threads (kt_cpuinfer / count)."""
    start = first_port if first_port is not None else router.port + 10
    workers = []
    for i in range(count):
        settings = base.replace(host="127.0.0.1", port=start + i)  # only the router is the way in
        gpus: tuple[int, ...] = ()
        if engine.kind == "sglang":
            gpus = tuple(range(i * base.tp_size, (i + 1) * base.tp_size))
            if base.kt_weight_path:
                pools = base.kt_threadpool_count or 1
                settings = settings.replace(kt_numa_nodes=tuple(range(i * pools, (i + 1) * pools)))
                if base.kt_cpuinfer:  # the host's cores are shared out like its NUMA nodes
                    settings = settings.replace(kt_cpuinfer=max(pools, base.kt_cpuinfer // count))
        workers.append(LaunchedWorker(settings, gpus=gpus))
    return Fleet(router, tuple(workers), engine)
