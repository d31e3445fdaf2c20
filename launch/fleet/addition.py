"""A worker to add to a serving fleet, built and checked before anything starts.

A launched worker is the fleet's engine settings (a template: those of a worker launched at start) on a port of
its own, with its own GPUs and any further changes; an attached one is a URL that must already prove it is an
engine serving the fleet's model (launch/fleet/worker_proof.py).
`check_addition` runs every check the fleet would run at start on the grown fleet (URLs, duplicates, ports,
GPUs, NUMA nodes) plus the new engine's own preflight (its port free, its paths, its settings), so a bad addition
is refused with every reason and nothing is launched or registered.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from launch.findings import Finding
from launch.fleet.spec import AttachedWorker, Fleet, LaunchedWorker
from launch.fleet.validation import validate_fleet
from launch.fleet.worker_proof import prove_worker
from launch.preflight import free_port, plan_launch
from launch.settings import LaunchSettings


def taken_ports(fleet: Fleet) -> set[int]:
    """Ports this host's part of the fleet listens on (the router, its exporter, local workers)."""
    return {fleet.router.port, fleet.router.metrics_port, *(w.settings.port for w in fleet.local_workers)}


def launched_worker(fleet: Fleet, template: LaunchSettings, port: int | None = None, gpus: tuple[int, ...] = (),
                    changes: dict[str, Any] | None = None) -> LaunchedWorker:
    """A worker on this host from `template` (plus `changes`), on `port` or on a free one no part of the fleet
    uses."""
    if port is None:
        taken = taken_ports(fleet)
        port = next(p for p in iter(lambda: free_port(template.host), None) if p not in taken)
    return LaunchedWorker(template.replace(**(changes or {}), port=port), gpus=gpus)


def check_addition(fleet: Fleet, worker: AttachedWorker | LaunchedWorker, model: str | None = None) -> list[Finding]:
    """What adding `worker` (attached, or launched on this host) brings: the grown fleet's findings that the fleet
    did not have, and the new engine's own; an attached one must prove it is an engine serving `model` (the
    fleet's, when known). Any error means it must not be added."""
    before = {(f.field, f.message) for f in validate_fleet(fleet)}
    findings = [f for f in validate_fleet(replace(fleet, workers=(*fleet.workers, worker)))
                if (f.field, f.message) not in before]
    if isinstance(worker, LaunchedWorker):
        findings += _check_gpus_pinned(fleet, worker)
        findings += plan_launch(worker.settings, worker.engine(fleet.engine)).findings
    elif not any(f.is_error and f.check == "worker_url" for f in findings):
        findings += _check_answers(worker, model)
    return findings


def _check_gpus_pinned(fleet: Fleet, worker: LaunchedWorker) -> list[Finding]:
    """A real engine with no GPUs of its own sees every GPU and loads onto those of the workers already here."""
    used = sorted({gpu for w in fleet.local_workers for gpu in w.gpus})
    if fleet.engine.kind != "sglang" or worker.gpus or not used:
        return []
    free = [str(max(used) + 1 + i) for i in range(worker.settings.tp_size)]
    return [Finding("error", "gpus", f"the workers here use GPUs {', '.join(map(str, used))}: without GPUs of its "
                    "own this worker would load onto them too", f"give it {worker.settings.tp_size} unused GPU(s), "
                    f"e.g. {','.join(free)}", check="gpus")]


def _check_answers(worker: AttachedWorker, model: str | None) -> list[Finding]:
    proof = prove_worker(worker.url).for_model(model)
    if proof.proven:
        return []
    fix = ("start the engine there first, then attach it" if not proof.conclusive
           else "attach an sglang-kt engine serving the fleet's model")
    return [Finding("error", "url", proof.problem or "", fix, check="worker_unproven")]
