"""`python -m launch fleet command|serve`: a fleet of engines behind sglang-router, previewed or run here.

    fleet command --engine sglang --workers 2 --preset tp8-hybrid --attach http://gpu-b:30000
    fleet serve --engine sim --workers 3 --policy round_robin --set router_port=31000
    fleet serve --fleet fleet.json

`--set router_FIELD=VALUE` sets a router setting; any other `--set` sets the launched workers' engine settings.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from launch.command import Engine
from launch.findings import Finding, format_findings, has_errors
from launch.fleet.commands import fleet_preview
from launch.fleet.fleet_file import load_fleet_file
from launch.fleet.progress import follow_fleet
from launch.fleet.recovery import recover_fleets
from launch.fleet.router_settings import POLICIES, RouterSettings, router_from_mapping
from launch.fleet.spec import AttachedWorker, Fleet, LaunchedWorker, replicate
from launch.fleet.supervisor import FleetState, FleetSupervisor
from launch.fleet.validation import validate_fleet
from launch.settings import LaunchSettings

Resolve = Callable[[argparse.Namespace], tuple[LaunchSettings, Engine]]
ROUTER_PREFIX = "router_"
DEFAULT_PRESET = "single-gpu"  # LaunchSettings' bare defaults do not run M3 (e.g. no --trust-remote-code)


def add_fleet_parser(sub: argparse._SubParsersAction, selection_args: Callable[[argparse.ArgumentParser], None],
                     resolve: Resolve, run_root: Path) -> None:
    fleet = sub.add_parser("fleet", help="several engines behind sglang-router: print its commands, or run it")
    commands = fleet.add_subparsers(dest="fleet_cmd", required=True)
    p = commands.add_parser("command", help="print every command of the fleet (router, workers, per host and node)")
    _fleet_args(p, selection_args)
    p.set_defaults(func=lambda args: _cmd_command(args, resolve))
    p = commands.add_parser("serve", help="run the fleet's local workers and the router here until Ctrl-C")
    _fleet_args(p, selection_args)
    p.add_argument("--run-root", type=Path, default=run_root, help=f"folder for fleets/ (default {run_root})")
    p.set_defaults(func=lambda args: _cmd_serve(args, resolve))


def _fleet_args(p: argparse.ArgumentParser, selection_args: Callable[[argparse.ArgumentParser], None]) -> None:
    selection_args(p)
    p.add_argument("--fleet", type=Path, metavar="FILE", help="the fleet as a JSON file (launch/fleet/fleet_file.py)")
    p.add_argument("--workers", type=int, default=0, metavar="N", help="engines to launch on this host")
    p.add_argument("--attach", action="append", default=[], metavar="URL",
                   help="a worker started elsewhere (repeatable)")
    p.add_argument("--policy", choices=POLICIES, help="the router's policy (default cache_aware)")
    p.add_argument("--first-port", type=int, metavar="PORT", help="port of the first launched worker "
                   "(default: the router's port + 10; the others follow)")


def build_fleet(args: argparse.Namespace, resolve: Resolve) -> Fleet:
    """The fleet the arguments describe: a fleet file, or --workers/--attach; router --set and --policy on top."""
    router_sets = [item for item in args.set if item.strip().lstrip("-").startswith(ROUTER_PREFIX)]
    args.set = [item for item in args.set if item not in router_sets]
    router_changes = {}
    for item in router_sets:
        key, sep, value = item.strip().lstrip("-").partition("=")
        if not sep:
            raise ValueError(f"--set needs field=value, got {item!r}")
        router_changes[key.removeprefix(ROUTER_PREFIX).replace("-", "_")] = value
    if args.policy:
        router_changes["policy"] = args.policy
    if args.fleet:
        if args.workers or args.attach:
            raise ValueError("--fleet describes the workers: leave out --workers and --attach")
        base = load_fleet_file(args.fleet)
        engine = Engine(args.engine or base.engine.kind, args.engine_python or base.engine.python)
        return Fleet(router_from_mapping(router_changes, base.router), base.workers, engine)
    if args.workers < 0 or args.workers + len(args.attach) == 0:
        raise ValueError("a fleet needs workers: --workers N (launched here), --attach URL, or --fleet FILE")
    if not args.preset and not args.profile:
        args.preset = DEFAULT_PRESET
    settings, engine = resolve(args)
    router = router_from_mapping(router_changes, RouterSettings())
    launched = replicate(settings, args.workers, router, engine, args.first_port)
    return Fleet(router, launched.workers + tuple(AttachedWorker(u) for u in args.attach), engine)


def _cmd_command(args: argparse.Namespace, resolve: Resolve) -> int:
    fleet = build_fleet(args, resolve)
    findings = validate_fleet(fleet)
    if findings:
        print(format_findings(findings), file=sys.stderr)
    print(fleet_preview(fleet))
    return 1 if has_errors(findings) else 0


def preflight(fleet: Fleet) -> list[Finding]:
    """Every check before `serve` starts anything: the fleet's own, each local worker's, and the router's ports."""
    from launch.hardware import detect_hardware
    from launch.preflight import check_port, plan_launch

    report = detect_hardware(fleet.engine.python) if fleet.engine.kind == "sglang" and fleet.local_workers else None
    findings = validate_fleet(fleet, report.cpu.physical_cores if report else None)
    for i, worker in enumerate(fleet.workers, 1):
        if worker in fleet.local_workers:
            plan = plan_launch(worker.settings, worker.engine(fleet.engine), report=report)
            findings += [Finding(f.level, f"workers[{i}].{f.field}" if f.field else f"workers[{i}]", f.message, f.fix,
                                 f.changes, f.check) for f in plan.findings]
    router = fleet.router
    for port, field in ((router.port, "router.port"), (router.metrics_port, "router.prometheus_port")):
        findings += [Finding(f.level, field, f.message, f.fix, (), f.check) for f in check_port(router.host, port)]
    return findings


def start_fleet(fleet: Fleet, run_root: Path, out: TextIO = sys.stdout) -> FleetSupervisor | None:
    """Stop what a killed earlier fleet left in `run_root`, check everything, then start: the supervisor, or None
    when a check failed (the findings are printed to `out` either way)."""
    for line in recover_fleets(run_root):
        print(f"recovery: {line}", file=out, flush=True)
    for i, worker in enumerate(fleet.workers, 1):
        if isinstance(worker, LaunchedWorker) and not worker.local:
            hosts = ", ".join(worker.nodes.hosts if worker.nodes else (str(worker.machine),))
            print(f"worker {i} runs on {hosts}: start it there (`python -m launch fleet command` prints its "
                  f"command); the router takes it once {worker.url} answers", file=out, flush=True)
    findings = preflight(fleet)
    if findings:
        print(format_findings(findings), file=out, flush=True)
    if has_errors(findings):
        return None
    supervisor = FleetSupervisor(fleet, run_root)
    supervisor.start()
    return supervisor


def _cmd_serve(args: argparse.Namespace, resolve: Resolve) -> int:
    fleet = build_fleet(args, resolve)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)  # a plain kill stops the fleet like Ctrl-C
    supervisor = start_fleet(fleet, args.run_root)
    if supervisor is None:
        return 1
    progress = follow_fleet(supervisor, sys.stdout, prefix="")  # until the fleet fails
    try:
        while progress.is_alive():
            progress.join(0.2)  # in steps: Ctrl-C reaches this thread between them
        return 1 if supervisor.state is FleetState.FAILED else 0
    except KeyboardInterrupt:
        return 0
    finally:
        supervisor.stop()


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
