"""A host's figures as `python -m launch probe --json` writes them, and the checks that a file of them must pass.

The same document describes this machine (the probe), another machine (`--host-file`, for a roofline or a
tune planned elsewhere) and the machine the simulated engine plays (`M3UI_SIM_HOST=FILE`). A file with a
missing or absurd field is refused with the field's name, before anything uses it.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

SIM_HOST_ENV = "M3UI_SIM_HOST"
MAX_HOST_FILE_BYTES = 1_000_000


class HostFileError(ValueError):
    """A host file that cannot describe a machine; the message names the field."""


@dataclass(frozen=True)
class HostCpu:
    physical_cores: int
    logical_cores: int
    numa_nodes: int
    isa: tuple[str, ...]  # the ISA flags kt-kernel cares about
    kt_backend: str  # the kt-kernel build this CPU loads (launch.cpuinfo.pick_kt_kernel_isa)
    model: str = ""
    kt_methods: tuple[str, ...] = ()  # --kt-method values that run on a fast path here
    per_node_physical: tuple[int, ...] = ()  # physical cores of each NUMA node (empty: not known)
    per_node_logical: tuple[int, ...] = ()


@dataclass(frozen=True)
class HostMemory:
    total_gb: float
    read_gbs: float  # all cores, every node at once
    per_node_read_gbs: tuple[float, ...]


@dataclass(frozen=True)
class HostGpu:
    name: str
    memory_gb: float
    pcie_gen: int | None
    pcie_width: int | None
    bandwidth_gbs: float | None  # the card's memory bandwidth, from the table of known cards


@dataclass(frozen=True)
class HostFinding:
    id: str
    ok: bool
    message: str = ""
    fix: str = ""  # the exact command
    source: str = ""  # where the cost was shown


@dataclass(frozen=True)
class HostFigures:
    cpu: HostCpu
    memory: HostMemory
    gpus: tuple[HostGpu, ...] = ()
    findings: tuple[HostFinding, ...] = field(default=())

    @property
    def cores_per_node(self) -> float:
        return self.cpu.physical_cores / self.cpu.numa_nodes

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2) + "\n"


def _get(doc: Mapping[str, Any], key: str, where: str) -> Any:
    if not isinstance(doc, Mapping) or key not in doc or doc[key] is None:
        raise HostFileError(f"host file: {where}{key} is missing")
    return doc[key]


def _int(doc: Mapping[str, Any], key: str, where: str, lo: int, hi: int) -> int:
    value = _get(doc, key, where)
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise HostFileError(f"host file: {where}{key}={value!r} must be a whole number from {lo} to {hi}")
    return value


def _float(value: Any, name: str, lo: float, hi: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or not lo <= value <= hi:
        raise HostFileError(f"host file: {name}={value!r} must be a number from {lo:g} to {hi:g}")
    return float(value)


def _optional_int(doc: Mapping[str, Any], key: str, where: str, lo: int, hi: int) -> int | None:
    return None if doc.get(key) is None else _int(doc, key, where, lo, hi)


def _strings(doc: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = doc.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise HostFileError(f"host file: {where}{key} must be a list of strings")
    return tuple(value)


def _cpu(doc: Mapping[str, Any]) -> HostCpu:
    physical = _int(doc, "physical_cores", "cpu.", 1, 4096)
    logical = _int(doc, "logical_cores", "cpu.", 1, 8192)
    if logical < physical:
        raise HostFileError(f"host file: cpu.logical_cores={logical} is below cpu.physical_cores={physical}")
    nodes = _int(doc, "numa_nodes", "cpu.", 1, 64)
    if nodes > physical:
        raise HostFileError(f"host file: cpu.numa_nodes={nodes} is more than cpu.physical_cores={physical}")
    backend = _get(doc, "kt_backend", "cpu.")
    if not isinstance(backend, str):
        raise HostFileError("host file: cpu.kt_backend must be a string")
    return HostCpu(physical, logical, nodes, _strings(doc, "isa", "cpu."), backend, str(doc.get("model") or ""),
                   _strings(doc, "kt_methods", "cpu."), _per_node(doc, "per_node_physical", nodes),
                   _per_node(doc, "per_node_logical", nodes))


def _per_node(doc: Mapping[str, Any], key: str, nodes: int) -> tuple[int, ...]:
    value = doc.get(key, [])
    if not isinstance(value, list) or (value and len(value) != nodes) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value):
        raise HostFileError(f"host file: cpu.{key} must list one whole number per NUMA node ({nodes})")
    return tuple(value)


def _memory(doc: Mapping[str, Any], nodes: int) -> HostMemory:
    total = _float(_get(doc, "total_gb", "memory."), "memory.total_gb", 0.5, 1e6)
    read = _float(_get(doc, "read_gbs", "memory."), "memory.read_gbs", 0.1, 1e5)
    per_node = _get(doc, "per_node_read_gbs", "memory.")
    if not isinstance(per_node, list) or len(per_node) != nodes:
        raise HostFileError(f"host file: memory.per_node_read_gbs must list one figure per NUMA node ({nodes})")
    figures = tuple(_float(v, f"memory.per_node_read_gbs[{i}]", 0.1, 1e5) for i, v in enumerate(per_node))
    return HostMemory(total, read, figures)


def _gpu(doc: Any, i: int) -> HostGpu:
    where = f"gpus[{i}]."
    name = _get(doc, "name", where)
    if not isinstance(name, str) or not name.strip():
        raise HostFileError(f"host file: {where}name must be a non-empty string")
    bandwidth = doc.get("bandwidth_gbs")
    return HostGpu(
        name, _float(_get(doc, "memory_gb", where), f"{where}memory_gb", 1.0, 4096.0),
        _optional_int(doc, "pcie_gen", where, 1, 7), _optional_int(doc, "pcie_width", where, 1, 32),
        None if bandwidth is None else _float(bandwidth, f"{where}bandwidth_gbs", 1.0, 1e5))


def _finding(doc: Any, i: int) -> HostFinding:
    if not isinstance(doc, Mapping) or not isinstance(doc.get("id"), str) or not isinstance(doc.get("ok"), bool):
        raise HostFileError(f"host file: findings[{i}] needs a string id and a boolean ok")
    return HostFinding(doc["id"], doc["ok"], str(doc.get("message") or ""), str(doc.get("fix") or ""),
                       str(doc.get("source") or ""))


def host_from_mapping(doc: Any) -> HostFigures:
    """Validate a parsed probe document; HostFileError names the first field that is missing or absurd."""
    if not isinstance(doc, Mapping):
        raise HostFileError("host file: not a JSON object")
    cpu = _cpu(_get(doc, "cpu", ""))
    memory = _memory(_get(doc, "memory", ""), cpu.numa_nodes)
    gpus, findings = doc.get("gpus", []), doc.get("findings", [])
    if not isinstance(gpus, list) or not isinstance(findings, list):
        raise HostFileError("host file: gpus and findings must be lists")
    return HostFigures(cpu, memory, tuple(_gpu(g, i) for i, g in enumerate(gpus)),
                       tuple(_finding(f, i) for i, f in enumerate(findings)))


def load_host_file(path: Path) -> HostFigures:
    try:
        if path.stat().st_size > MAX_HOST_FILE_BYTES:
            raise HostFileError(f"host file {path} is larger than {MAX_HOST_FILE_BYTES} bytes")
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise HostFileError(f"cannot read host file {path}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HostFileError(f"host file {path} is not JSON: {exc}") from None
    return host_from_mapping(doc)


def sim_host(env: Mapping[str, str] | None = None) -> HostFigures | None:
    """The host M3UI_SIM_HOST names (the simulated engine plays it; tune and roofline read it too)."""
    raw = (os.environ if env is None else env).get(SIM_HOST_ENV, "").strip()
    return load_host_file(Path(raw)) if raw else None
