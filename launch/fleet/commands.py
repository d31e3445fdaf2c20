"""A fleet's commands: the router's argv built from its settings, and each worker's, per host and node.

Like the engine's command (launch/command.py), these are argv lists, and the printed preview is rendered from the
very argv that runs.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from launch.command import Command, Engine, build_command
from launch.fleet.router_settings import ROUTER_MODULE, router_flag_argv
from launch.fleet.spec import Fleet, LaunchedWorker


@dataclass(frozen=True)
class NodeCommand:
    machine: str | None  # None: this host
    rank: int | None  # the node rank of a multi-node engine
    command: Command


def router_command(fleet: Fleet) -> Command:
    """The router in front of every worker of the fleet; it runs under this Python (sglang-router ships with m3ui)."""
    argv = [sys.executable, "-m", ROUTER_MODULE, *router_flag_argv(fleet.router), "--worker-urls", *fleet.worker_urls]
    return Command(tuple(argv), (), None)


def worker_commands(worker: LaunchedWorker, engine: Engine, run_dir: Path | None = None) -> tuple[NodeCommand, ...]:
    """One command per host the worker runs on: the engine's own, with its GPUs pinned and, for a multi-node
    engine, the same command on every node but for --node-rank."""
    base = build_command(worker.settings, worker.engine(engine), run_dir)
    if worker.nodes is None:
        return (NodeCommand(worker.machine, None, base),)
    nodes = worker.nodes
    return tuple(
        NodeCommand(host, rank, Command((*base.argv, "--nnodes", str(nodes.nnodes), "--node-rank", str(rank),
                                         "--dist-init-addr", nodes.dist_init_addr), base.env, base.cwd))
        for rank, host in enumerate(nodes.hosts))


def fleet_preview(fleet: Fleet) -> str:
    """Every command of the fleet, router first, each under a comment naming where it runs."""
    blocks = [f"# router on this host: {fleet.router.url}\n{router_command(fleet).shell_text()}"]
    for i, worker in enumerate(fleet.workers, 1):
        if not isinstance(worker, LaunchedWorker):
            blocks.append(f"# worker {i}: attached, {worker.url} (started elsewhere)")
            continue
        for node in worker_commands(worker, fleet.engine):
            where = f"on {node.machine}" if node.machine else "on this host"
            rank = f", node {node.rank} of {worker.nodes.nnodes}" if worker.nodes and node.rank is not None else ""
            blocks.append(f"# worker {i}{rank} {where}: {worker.url}\n{node.command.shell_text()}")
    return "\n\n".join(blocks)
