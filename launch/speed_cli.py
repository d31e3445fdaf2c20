"""`python -m launch probe | roofline | bench | tune`: is this speed normal for the hardware, and what should change.

probe: this host's figures (launch/host_probe.py). roofline: the speed a launch can reach on a host
(launch/roofline.py). bench: measure a running engine against it (launch/bench.py). tune: relaunch the engine
over a short, ordered search of the KT knobs and keep the best as a profile (launch/tune.py).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

from launch.command import Engine
from launch.host_file import SIM_HOST_ENV, HostFigures, load_host_file, sim_host
from launch.model_config import ModelShape, load_model_shape
from launch.settings import LaunchSettings

Resolve = Callable[[argparse.Namespace], tuple[LaunchSettings, Engine]]


def host_for(args: argparse.Namespace) -> HostFigures:
    """--host-file, else the host the simulated engine plays (M3UI_SIM_HOST), else this host, probed quickly."""
    if getattr(args, "host_file", None):
        return load_host_file(args.host_file)
    played = sim_host()
    if played is not None:
        return played
    from launch.host_probe import probe_host

    return probe_host(quick=True)


def shape_for(settings: LaunchSettings) -> ModelShape:
    """The model's config.json; the bundled M3-shaped one when the settings name a folder without one (a preset's
    placeholder path), as the simulated engine does."""
    path = settings.model_path
    return load_model_shape(path if path and (Path(path) / "config.json").is_file() else None)


def cmd_probe(args: argparse.Namespace) -> int:
    from launch.host_probe import format_probe, probe_host

    host = probe_host(quick=args.quick)
    print(host.to_json() if args.json else format_probe(host), end="" if args.json else "\n")
    return 0


def cmd_roofline(args: argparse.Namespace, resolve: Resolve) -> int:
    from launch.roofline import format_roofline, roofline

    settings, _ = resolve(args)
    host = host_for(args)
    result = roofline(shape_for(settings), settings, host)
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(format_roofline(result, settings))
    return 0


def add_speed_parsers(sub: argparse._SubParsersAction, selection_args: Callable[[argparse.ArgumentParser], None],
                      resolve: Resolve, data_dir: Path) -> None:
    p = sub.add_parser("probe", help="measure this host: memory bandwidth, cores, ISA, host settings, GPUs")
    p.add_argument("--json", action="store_true", help="print the host document (a --host-file for another machine)")
    p.add_argument("--quick", action="store_true", help="smaller buffers: about a second")
    p.set_defaults(func=cmd_probe)
    p = sub.add_parser("roofline", help="the decode and prefill tok/s a launch can reach on a host, with breakdown")
    selection_args(p)
    p.add_argument("--host-file", type=Path, help=f"a probe --json from the target host (default: ${SIM_HOST_ENV}, "
                   "else this host, probed)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=lambda args: cmd_roofline(args, resolve))
