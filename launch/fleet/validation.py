"""Checks of a whole fleet, before anything starts: what each part's own checks cannot see.

Ports and devices must not collide on one host (the router, its exporter, every engine there, a multi-node
engine's rendezvous), workers must serve one model under distinct URLs, and a multi-node engine's nodes must agree
(sglang requires tp_size divisible by --nnodes; rank 0 hosts --dist-init-addr).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from urllib.parse import urlsplit

from launch.findings import Finding
from launch.fleet.spec import AttachedWorker, Fleet, LaunchedWorker, MultiNode

LOCAL = "this host"


def _err(field: str, message: str, fix: str | None = None, check: str = "") -> Finding:
    return Finding("error", field, message, fix, check=check)


# Settings in which launched workers must not differ: the router sends any turn of a chat to any of them.
SAME_EVERYWHERE = ("model_path", "tool_call_parser", "reasoning_parser")


def validate_fleet(fleet: Fleet, physical_cores: int | None = None) -> list[Finding]:
    """Every fleet-wide check; `physical_cores` (this host's, when known) checks the CPU-expert threads."""
    return [*_check_workers(fleet), *_check_agreement(fleet), *_check_ports(fleet), *_check_devices(fleet),
            *_check_policy(fleet), *_check_cpu_share(fleet, physical_cores)]


def _check_cpu_share(fleet: Fleet, physical_cores: int | None) -> Iterator[Finding]:
    threads = [w.settings.kt_cpuinfer or 0 for w in fleet.local_workers if w.settings.kt_weight_path]
    if physical_cores and len(threads) > 1 and sum(threads) > physical_cores:
        yield Finding("warning", "workers", f"the {len(threads)} KT workers on this host run {sum(threads)} "
                      f"CPU-expert threads on {physical_cores} physical cores: they slow each other down",
                      f"give each about {physical_cores // len(threads)} (kt_cpuinfer)", check="cpu_share")


def _check_agreement(fleet: Fleet) -> Iterator[Finding]:
    launched = [w.settings for w in fleet.workers if isinstance(w, LaunchedWorker)]
    for name in SAME_EVERYWHERE:
        values = {getattr(s, name) for s in launched}
        if len(values) > 1:
            listed = ", ".join(sorted(map(str, values)))
            yield Finding("warning", "workers", f"the launched workers differ in {name} ({listed}): the same chat "
                          "would be answered differently depending on the worker the router picks",
                          f"give every worker the same {name}", check="workers_differ")


def _check_workers(fleet: Fleet) -> Iterator[Finding]:
    if not fleet.workers:
        yield _err("workers", "a fleet needs at least one worker", "launch one or attach one by URL", "no_workers")
    seen: dict[str, int] = {}
    names = {w.settings.served_model_name for w in fleet.workers if isinstance(w, LaunchedWorker)}
    if len(names) > 1:
        listed = ", ".join(sorted(map(str, names)))
        yield _err("workers", f"the launched workers serve different models ({listed})",
                   "give every worker the same served_model_name: the router balances one model", "one_model")
    for i, worker in enumerate(fleet.workers, 1):
        where = f"workers[{i}]"
        if isinstance(worker, AttachedWorker):
            yield from _check_url(where, worker.url)
        elif worker.settings.api_key:
            yield _err(where, "a worker behind the router cannot require an API key yet",
                       "unset its api_key and keep the router on a trusted address", "worker_api_key")
        if isinstance(worker, LaunchedWorker) and worker.nodes is not None:
            yield from _check_nodes(where, worker, worker.nodes)
        url = worker.url.rstrip("/")
        if url in seen:
            yield _err(where, f"{url} is also worker {seen[url]}", "give each worker its own host:port", "worker_url")
        seen.setdefault(url, i)


def _check_url(where: str, url: str) -> Iterator[Finding]:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        yield _err(where, f"{url!r} is not a URL: {exc}", "write it as http://HOST:PORT", "worker_url")
        return
    if parts.scheme not in ("http", "https") or not parts.hostname:
        yield _err(where, f"{url!r} is not an http(s)://HOST:PORT address", "write it as http://HOST:PORT",
                   "worker_url")
    elif parts.username or parts.password or parts.query or parts.fragment or parts.path not in ("", "/"):
        yield _err(where, f"{url!r} carries more than scheme, host and port", "write it as http://HOST:PORT",
                   "worker_url")
    elif port is None:
        yield _err(where, f"{url!r} names no port", "add the engine's port, e.g. :30000", "worker_url")


def _check_nodes(where: str, worker: LaunchedWorker, nodes: MultiNode) -> Iterator[Finding]:
    settings = worker.settings
    if nodes.nnodes < 2:
        yield _err(where, "a multi-node engine needs two or more hosts", "list every node's host, rank 0 first",
                   "nnodes")
    if len(set(nodes.hosts)) != nodes.nnodes:
        yield _err(where, f"a host runs two node ranks of one engine: {', '.join(nodes.hosts)}",
                   "give each node rank its own host", "node_hosts")
    if settings.tp_size % max(nodes.nnodes, 1):
        yield _err(where, f"tp_size {settings.tp_size} is not divisible by {nodes.nnodes} nodes (sglang refuses it)",
                   f"use a tp_size that is a multiple of {nodes.nnodes}", "nnodes")
    elif worker.gpus and len(worker.gpus) != settings.tp_size // nodes.nnodes:
        yield _err(where, f"each node runs {settings.tp_size // nodes.nnodes} GPU(s) of the TP group, "
                   f"but {len(worker.gpus)} are pinned", "pin tp_size / nodes GPUs per node", "gpus")
    host, _, port = nodes.dist_init_addr.rpartition(":")
    if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        yield _err(where, f"dist_init_addr {nodes.dist_init_addr!r} is not HOST:PORT",
                   f"use {nodes.hosts[0]}:<free port>", "dist_init_addr")
        return
    if host.strip("[]") != nodes.hosts[0]:
        yield _err(where, f"dist_init_addr {nodes.dist_init_addr} is not on node rank 0 ({nodes.hosts[0]})",
                   f"use {nodes.hosts[0]}:{port}: rank 0 hosts the rendezvous", "dist_init_addr")


def _ports(fleet: Fleet) -> Iterator[tuple[str, int, str]]:
    """(machine, port, what) of everything that listens."""
    yield LOCAL, fleet.router.port, "the router"
    yield LOCAL, fleet.router.metrics_port, "the router's Prometheus exporter"
    for i, worker in enumerate(fleet.workers, 1):
        if not isinstance(worker, LaunchedWorker):
            continue
        yield worker.head or LOCAL, worker.settings.port, f"worker {i}"
        if worker.nodes is not None:
            host, _, port = worker.nodes.dist_init_addr.rpartition(":")
            if port.isdigit():
                yield worker.nodes.hosts[0], int(port), f"worker {i}'s dist_init_addr"


def _check_ports(fleet: Fleet) -> Iterator[Finding]:
    taken: dict[tuple[str, int], str] = {}
    for machine, port, what in _ports(fleet):
        other = taken.setdefault((machine, port), what)
        if other != what:
            yield _err("ports", f"{what} and {other} both use port {port} on {machine}",
                       "give each its own port (--set router_port=..., prometheus_port=..., or the worker's port)",
                       "port_collision")


def _check_devices(fleet: Fleet) -> Iterator[Finding]:
    gpus: dict[tuple[str, int], int] = {}
    numa: dict[tuple[str, int], list[int]] = defaultdict(list)
    for i, worker in enumerate(fleet.workers, 1):
        if not isinstance(worker, LaunchedWorker):
            continue
        machines = worker.nodes.hosts if worker.nodes else (worker.machine or LOCAL,)
        if worker.gpus and worker.nodes is None and len(worker.gpus) != worker.settings.tp_size:
            yield _err(f"workers[{i}]", f"tp_size {worker.settings.tp_size} needs as many GPUs, "
                       f"{len(worker.gpus)} are pinned", "pin one GPU per TP rank", "gpus")
        for machine in machines:
            for gpu in worker.gpus:
                other = gpus.setdefault((machine, gpu), i)
                if other != i:
                    yield _err(f"workers[{i}]", f"GPU {gpu} on {machine} is also worker {other}'s",
                               "give each worker its own GPUs", "gpu_collision")
            for node in worker.settings.kt_numa_nodes or ():
                numa[(machine, node)].append(i)
    for (machine, node), users in numa.items():
        if len(users) > 1:
            yield _err("workers", f"workers {', '.join(map(str, users))} all run CPU experts on NUMA node {node} "
                       f"of {machine}", "give each worker its own NUMA nodes (kt_numa_nodes)", "numa_collision")


def _check_policy(fleet: Fleet) -> Iterator[Finding]:
    if fleet.router.policy == "power_of_two" and len(fleet.workers) < 2:
        yield _err("router.policy", "power_of_two needs at least two workers (the router refuses to start)",
                   "add a worker or use cache_aware", "policy")
