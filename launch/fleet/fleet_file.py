"""A fleet described in a JSON file (`--fleet FILE`), read strictly: an unknown key or a wrong type is an error
that names where it is, before anything starts.

    {"engine": "sglang", "engine_python": "/opt/kt/bin/python",
     "router": {"port": 30000, "policy": "cache_aware"},
     "base": {"preset": "single-gpu", "model_path": "/models/M3", "set": {"kt_cpuinfer": 60}},
     "workers": [
       {"port": 30010, "gpus": [0], "set": {"kt_numa_nodes": [0]}},      launched here
       {"machine": "gpu-b", "port": 30000, "gpus": [0]},                 launched on gpu-b (command printed)
       {"nodes": ["gpu-c", "gpu-d"], "dist_init_addr": "gpu-c:5000",     one engine over two hosts
        "port": 30000, "set": {"tp_size": 16}},
       {"url": "http://10.0.0.9:30000"}]}                                attached
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from launch.command import Engine
from launch.fleet.router_settings import router_from_mapping
from launch.fleet.spec import AttachedWorker, Fleet, LaunchedWorker, MultiNode, Worker
from launch.model_config import BUNDLED_M3_CONFIG
from launch.presets import preset
from launch.settings import LaunchSettings, from_mapping

MAX_FILE_BYTES = 1 << 20
TOP_KEYS = {"engine", "engine_python", "router", "base", "workers"}
BASE_KEYS = {"preset", "model_path", "set"}
WORKER_KEYS = {"url", "port", "machine", "gpus", "nodes", "dist_init_addr", "set"}


class FleetFileError(ValueError):
    """The fleet file cannot be read as a fleet; the message says where."""


def load_fleet_file(path: Path) -> Fleet:
    if not path.is_file():
        raise FleetFileError(f"{path}: no such file")
    if path.stat().st_size > MAX_FILE_BYTES:
        raise FleetFileError(f"{path}: larger than {MAX_FILE_BYTES} bytes; a fleet file is a few lines of JSON")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FleetFileError(f"{path}: not JSON: {exc}") from None
    return fleet_from_mapping(data, str(path))


def fleet_from_mapping(data: Any, where: str = "fleet") -> Fleet:
    data = _object(data, where, TOP_KEYS)
    kind = data.get("engine", "sglang")
    if kind not in ("sglang", "sim"):
        raise FleetFileError(f"{where}: engine must be 'sglang' or 'sim', not {kind!r}")
    engine = Engine(kind, _text(data.get("engine_python", "python"), f"{where}: engine_python"))
    try:
        router = router_from_mapping(_object(data.get("router", {}), f"{where}: router", None))
    except ValueError as exc:
        raise FleetFileError(f"{where}: router: {exc}") from None
    base = _base_settings(_object(data.get("base", {}), f"{where}: base", BASE_KEYS), f"{where}: base", kind)
    items = data.get("workers")
    if not isinstance(items, list) or not items:
        raise FleetFileError(f"{where}: workers must be a non-empty list")
    workers = tuple(_worker(item, base, f"{where}: workers[{i}]") for i, item in enumerate(items, 1))
    return Fleet(router, workers, engine)


def _base_settings(data: dict[str, Any], where: str, kind: str) -> LaunchSettings:
    """The settings every launched worker starts from; the simulated engine reads the bundled M3-shaped
    config.json when no model is named (as `python -m launch --engine sim` does)."""
    if kind == "sim" and "model_path" not in data:
        data = {**data, "model_path": str(BUNDLED_M3_CONFIG.parent)}
    try:
        if "preset" in data:
            model = data.get("model_path")
            settings = preset(_text(data["preset"], f"{where}: preset"), *([model] * 2 if model else []))
        else:
            settings = LaunchSettings(model_path=data.get("model_path"))
        return from_mapping(_object(data.get("set", {}), f"{where}: set", None), settings)
    except ValueError as exc:
        raise FleetFileError(f"{where}: {exc}") from None


def _worker(data: Any, base: LaunchSettings, where: str) -> Worker:
    data = _object(data, where, WORKER_KEYS)
    if "url" in data:
        if set(data) != {"url"}:
            raise FleetFileError(f"{where}: an attached worker has only a url (it is started elsewhere)")
        return AttachedWorker(_text(data["url"], f"{where}: url"))
    changes = dict(_object(data.get("set", {}), f"{where}: set", None))
    if "port" in data:
        changes["port"] = data["port"]
    try:
        settings = from_mapping(changes, base)
    except ValueError as exc:
        raise FleetFileError(f"{where}: {exc}") from None
    gpus = tuple(_int(g, f"{where}: gpus") for g in _list(data.get("gpus", []), f"{where}: gpus"))
    nodes = None
    if "nodes" in data:
        hosts = tuple(_text(h, f"{where}: nodes") for h in _list(data["nodes"], f"{where}: nodes"))
        nodes = MultiNode(hosts, _text(data.get("dist_init_addr"), f"{where}: dist_init_addr"))
        if "machine" in data:
            raise FleetFileError(f"{where}: a multi-node worker names its hosts in nodes, not machine")
    elif "dist_init_addr" in data:
        raise FleetFileError(f"{where}: dist_init_addr belongs to a multi-node worker (give its nodes)")
    machine = _text(data["machine"], f"{where}: machine") if "machine" in data else None
    return LaunchedWorker(settings, machine, gpus, nodes)


def _object(value: Any, where: str, keys: set[str] | None) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise FleetFileError(f"{where}: expected an object")
    unknown = set(value) - keys if keys is not None else set()
    if unknown:
        raise FleetFileError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(keys))}")  # type: ignore[arg-type]  # unknown keys imply keys is not None
    return value


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise FleetFileError(f"{where}: expected a list")
    return value


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise FleetFileError(f"{where}: expected non-empty text")
    return value.strip()


def _int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise FleetFileError(f"{where}: expected a whole number >= 0, got {value!r}")
    return value
