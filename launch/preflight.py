"""Preflight: the I/O checks (paths, config.json, free port, engine packages) plus every validation rule,
run before anything starts. A launch plan carries a command only when no finding is an error."""

from __future__ import annotations

import errno
import socket
from dataclasses import dataclass
from pathlib import Path

from launch.command import Command, CommandError, Engine, build_command
from launch.findings import Finding, has_errors
from launch.hardware import HardwareReport, detect_cpu, detect_hardware
from launch.host_file import HostFigures, HostFileError, sim_host
from launch.model_config import ModelConfigError, ModelShape, load_model_shape
from launch.settings import LaunchSettings
from launch.sim.config import SimConfigError, load_sim_config
from launch.validation import HostFacts, validate

ENGINE_PACKAGES = ("sglang-kt", "kt-kernel")


@dataclass(frozen=True)
class LaunchPlan:
    findings: tuple[Finding, ...]
    shape: ModelShape | None
    host: HostFacts
    command: Command | None  # None whenever a finding is an error

    @property
    def ok(self) -> bool:
        return self.command is not None


def host_facts(report: HardwareReport) -> HostFacts:
    gpus = report.gpu.gpus
    return HostFacts(
        gpu_count=len(gpus),
        gpu_bytes=float(min(g.memory_total_bytes for g in gpus)) if gpus else None,
        compute_capability=min(g.compute_capability for g in gpus) if gpus else None,
        physical_cores=report.cpu.physical_cores,
        logical_cores=report.cpu.logical_cores,
        numa_node_ids=tuple(n.id for n in report.cpu.numa_nodes),
        ram_bytes=float(report.memory.total_bytes) if report.memory.total_bytes else None,
    )


def simulated_host(settings: LaunchSettings) -> HostFacts:
    """The simulated engine's hardware, as it will see it: its GPUs from the same M3UI_SIM_* environment
    variables, and the CPUs of the host it plays (M3UI_SIM_HOST), else this machine's, which it runs on and which
    the Monitor lays kt-kernel's pools over (so the checks and the Monitor judge --kt-cpuinfer alike)."""
    hw = load_sim_config(max(1, settings.tp_size))
    physical: int | None
    logical: int | None
    played = _played_host()  # M3UI_SIM_HOST: the CPU the sim plays is checked like a real one
    if played is not None:
        physical, logical = played.cpu.physical_cores, played.cpu.logical_cores
        nodes = tuple(range(played.cpu.numa_nodes))
    else:  # this machine's CPUs, as the Monitor reads them: the sim's workers run here
        here = detect_cpu()
        physical, logical = here.physical_cores, here.logical_cores
        nodes = tuple(n.id for n in here.numa_nodes if n.cpus)
    return HostFacts(gpu_count=hw.gpu_count, gpu_bytes=hw.gpu_bytes, compute_capability=(9, 0),
                     physical_cores=physical, logical_cores=logical, numa_node_ids=nodes, ram_bytes=hw.ram_bytes,
                     simulated=True)

def _played_host() -> HostFigures | None:
    try:
        return sim_host()
    except HostFileError as exc:
        raise SimConfigError(str(exc)) from None


def user_path(text: str) -> Path:
    """`text` with `~` expanded; `~nosuchuser` stays as written (and then does not exist) instead of raising."""
    try:
        return Path(text).expanduser()
    except RuntimeError:
        return Path(text)


def check_model_path(settings: LaunchSettings) -> tuple[ModelShape | None, list[Finding]]:
    if not settings.model_path:
        return None, [Finding("error", "model_path", "--model-path is not set",
                              "choose the folder with the model's config.json", check="model_path")]
    path = user_path(settings.model_path)
    if not path.is_dir():
        return None, [Finding("error", "model_path", f"model folder {path} does not exist",
                              "download the model first (admin panel → Model weights) or fix the path",
                              check="model_path")]
    try:
        return load_model_shape(path), []
    except ModelConfigError as exc:
        return None, [Finding("error", "model_path", str(exc), "point --model-path at the folder that holds "
                              "config.json", check="model_path")]


def check_paths(settings: LaunchSettings, engine: Engine) -> list[Finding]:
    out: list[Finding] = []
    if settings.kt_weight_path:
        weights = user_path(settings.kt_weight_path)
        if not weights.is_dir():
            out.append(Finding("error", "kt_weight_path", f"expert weight folder {weights} does not exist",
                               "for MiniMax-M3 use the model folder", check="kt_weight_path"))
        elif engine.kind == "sglang" and not any(weights.glob("*.safetensors")):
            out.append(Finding("error", "kt_weight_path", f"no .safetensors files in {weights}",
                               "finish the download or fix the path", check="kt_weight_path"))
    if settings.init_expert_location and not user_path(settings.init_expert_location).is_file():
        out.append(Finding("error", "init_expert_location", f"{settings.init_expert_location} does not exist",
                           "pick a recorder dump (.pt) from an earlier run", check="init_expert_location"))
    return out


def check_port(host: str, port: int) -> list[Finding]:
    """sglang only notices a busy port after the whole model load: check it now."""
    if not 1 <= port <= 65535:
        return []  # the range rule reports it
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        # As uvicorn (so sglang) binds: connections of a just-stopped engine lingering in TIME_WAIT do not
        # hold the port; only a live listener does.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except (TypeError, ValueError, UnicodeError):
            return []  # not an address at all: the host rule reports it
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                free = free_port(host)
                return [Finding("error", "port", f"port {port} on {host} is already in use",
                                f"stop what uses it, or use port {free}", (("port", free),), check="port")]
            return [Finding("error", "host", f"cannot listen on {host}:{port}: {exc.strerror}",
                            "use 0.0.0.0 or 127.0.0.1", check="port")]
    return []


def free_port(host: str = "127.0.0.1") -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def check_engine_packages(report: HardwareReport, engine: Engine) -> list[Finding]:
    if engine.kind != "sglang":
        return []
    pk = report.packages
    if pk.error:
        return [Finding("error", None, f"engine Python {engine.python!r}: {pk.error}",
                        "set the engine Python to the interpreter of the venv with sglang-kt", check="engine_python")]
    missing = [name for name in ENGINE_PACKAGES if not pk.versions.get(name)]
    if missing:
        return [Finding("error", None, f"{', '.join(missing)} not installed in {engine.python}",
                        "pip install -r requirements-gpu.txt in the engine's Python", check="engine_python")]
    return []


def plan_launch(settings: LaunchSettings, engine: Engine, *, run_dir: Path | None = None,
                report: HardwareReport | None = None) -> LaunchPlan:
    """Every check; the command only when nothing is an error."""
    shape, findings = check_model_path(settings)
    findings += check_paths(settings, engine)
    if engine.kind == "sim":
        try:
            host = simulated_host(settings)
        except SimConfigError as exc:
            return LaunchPlan((*findings, Finding("error", None, str(exc), "fix or unset the variable",
                                                  check="sim_config")), shape, HostFacts(0, None, None, None,
                                                                                        None, (), None), None)
    else:
        report = report or detect_hardware(engine.python)
        host = host_facts(report)
        findings += check_engine_packages(report, engine)
    findings += validate(settings, shape, host)
    findings += check_port(settings.host, settings.port)
    command = None
    if not has_errors(findings):
        try:
            command = build_command(settings, engine, run_dir)
        except CommandError as exc:
            findings.append(Finding("error", "extra_args", str(exc), check="extra_args"))
    return LaunchPlan(tuple(findings), shape, host, command)
