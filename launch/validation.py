"""Pure validation rules: settings (+ model shape + host facts) → findings. No I/O here.

Each rule names the field it concerns and, where one exists, the concrete fix. The I/O checks (paths,
config.json, free port, engine packages) live in launch/preflight.py and feed their facts in here.
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from launch.command import CommandError, split_extra_args
from launch.findings import Finding
from launch.model_config import ModelShape
from launch.presets import tp8_hybrid
from launch.settings import FIELD_BY_FLAG, LaunchSettings, setting_fields
from launch.sglang_flags import SGLANG_FLAGS
from launch.sizing import (
    CPU_RAM_HEADROOM,
    GB,
    default_mem_fraction,
    gpu_experts_per_layer,
    max_gpu_experts,
    memory_plan,
    model_footprint,
)

M3_MAX_TP = 8
# what dynamic expert update is told to use when it lacks a prefill threshold: the reference TP8 deployment's
DYNAMIC_UPDATE_THRESHOLD = tp8_hybrid().kt_gpu_prefill_token_threshold
_HOSTNAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$")


@dataclass(frozen=True)
class HostFacts:
    """What validation needs to know of the machine the engine will run on (real or simulated)."""

    gpu_count: int
    gpu_bytes: float | None  # smallest GPU's memory
    compute_capability: tuple[int, int] | None
    physical_cores: int | None
    logical_cores: int | None
    numa_node_ids: tuple[int, ...]
    ram_bytes: float | None
    simulated: bool = False


Rule = Callable[[LaunchSettings, ModelShape | None, HostFacts | None], Iterator[Finding]]


def _err(field: str | None, message: str, fix: str | None = None, changes=(), check: str = "") -> Finding:
    return Finding("error", field, message, fix, tuple(changes), check)


def _warn(field: str | None, message: str, fix: str | None = None, changes=(), check: str = "") -> Finding:
    return Finding("warning", field, message, fix, tuple(changes), check)


def check_values(s: LaunchSettings, shape: ModelShape | None, host: HostFacts | None) -> Iterator[Finding]:
    """Types are guaranteed by the dataclass; ranges, choices and argv-safety are checked here."""
    for fld in setting_fields():
        value = getattr(s, fld.name)
        spec = fld.spec
        if value is None or spec.kind == "bool":
            continue
        values = value if spec.kind == "int_list" else (value,)
        for v in values:
            if spec.choices and v not in spec.choices:
                yield _err(fld.name, f"{spec.flag} {v!r} is not one of: {', '.join(spec.choices)}",
                           f"pick one of {', '.join(spec.choices[:6])}{'...' if len(spec.choices) > 6 else ''}",
                           check="choices")
            numeric = isinstance(v, int | float) and not isinstance(v, bool)
            if numeric and spec.lo is not None and spec.hi is not None and not spec.lo <= v <= spec.hi:
                yield _err(fld.name, f"{spec.flag} {v} is outside {spec.lo:g}..{spec.hi:g}",
                           f"use a value from {spec.lo:g} to {spec.hi:g}", check="range")
            if isinstance(v, str):
                if v == "" and spec.kind != "secret":
                    yield _err(fld.name, f"{spec.flag} is empty", "enter a value or clear the field",
                               check="empty")
                elif v.startswith("-"):
                    yield _err(fld.name, f"{spec.flag} {v!r} starts with '-', the engine would read it as a flag",
                               "remove the leading dash", check="argv")
                elif any(c in v for c in "\n\r\x00"):
                    yield _err(fld.name, f"{spec.flag} contains a line break or NUL character",
                               "remove the control character", check="argv")
                elif spec.kind == "secret" and any(c.isspace() for c in v):
                    yield _err(fld.name, f"{spec.flag} contains whitespace", "use a key without spaces",
                               check="argv")


def check_kt_active(s: LaunchSettings, shape: ModelShape | None, host: HostFacts | None) -> Iterator[Finding]:
    if not s.kt_weight_path:
        yield _err("kt_weight_path", "--kt-weight-path is not set: KT is silently disabled and every expert "
                   "would be loaded on the GPU", "set it to the folder with the expert weights (for M3: the "
                   "model folder)", [("kt_weight_path", s.model_path)] if s.model_path else [], check="kt_active")
    count, ratio = s.kt_num_gpu_experts, s.kt_gpu_experts_ratio
    if count is None and ratio is None:
        yield _err("kt_num_gpu_experts", "neither --kt-num-gpu-experts nor --kt-gpu-experts-ratio is set: the "
                   "engine only logs 'Either kt_num_gpu_experts or kt_gpu_experts_ratio is required' and runs "
                   "without KT", "set --kt-num-gpu-experts (see the sizing advice)", check="gpu_experts_one_of")
    elif count is not None and ratio is not None:
        yield _warn("kt_gpu_experts_ratio", f"both are set: the ratio {ratio} overrides "
                    f"--kt-num-gpu-experts {count}", "clear one of them", [("kt_gpu_experts_ratio", None)],
                    check="gpu_experts_one_of")
    if count is not None and shape is not None and count > shape.num_routed_experts:
        yield _err("kt_num_gpu_experts", f"{count} GPU experts per layer, but the model has only "
                   f"{shape.num_routed_experts} routed experts per layer", f"use at most {shape.num_routed_experts}",
                   [("kt_num_gpu_experts", shape.num_routed_experts)], check="gpu_experts_range")
    if not s.kt_method and s.kt_weight_path:
        yield _err("kt_method", "--kt-method is not set", "for MiniMax-M3 use MXFP8", [("kt_method", "MXFP8")],
                   check="kt_method")


def _on_host(host: HostFacts) -> Callable[..., Finding]:
    """What a CPU setting this machine cannot honour is: an error for sglang-kt; for the simulated engine, which
    runs no kt-kernel workers, a warning (it starts anyway, and the Monitor shows the same misfit)."""
    return _warn if host.simulated else _err


def _sim_note(host: HostFacts) -> str:
    return " (the simulated engine starts anyway; sglang-kt would not run well like this)" if host.simulated else ""


def check_cpu(s: LaunchSettings, shape: ModelShape | None, host: HostFacts | None) -> Iterator[Finding]:
    if s.kt_cpuinfer is None:
        if s.kt_weight_path:
            fix = [("kt_cpuinfer", host.physical_cores)] if host and host.physical_cores else []
            yield _err("kt_cpuinfer", "--kt-cpuinfer is not set: sglang-kt crashes at start "
                       "(None // threadpool count)", "set it to the physical core count", fix, check="cpuinfer")
        return
    if host is None:
        return
    if host.logical_cores and s.kt_cpuinfer > host.logical_cores:
        yield _on_host(host)("kt_cpuinfer", f"--kt-cpuinfer {s.kt_cpuinfer} exceeds the {host.logical_cores} "
                             "logical CPUs: kt-kernel's workers would share CPUs" + _sim_note(host),
                             f"use {host.physical_cores or host.logical_cores}",
                             [("kt_cpuinfer", host.physical_cores or host.logical_cores)], check="cpuinfer")
    elif host.physical_cores and s.kt_cpuinfer > host.physical_cores:
        yield _warn("kt_cpuinfer", f"--kt-cpuinfer {s.kt_cpuinfer} is above the {host.physical_cores} physical "
                    "cores: hyper-threads share the vector units and usually slow kt-kernel down",
                    f"use {host.physical_cores}", [("kt_cpuinfer", host.physical_cores)], check="cpuinfer")


def check_numa(s: LaunchSettings, shape: ModelShape | None, host: HostFacts | None) -> Iterator[Finding]:
    pools = s.kt_threadpool_count or 0
    if s.kt_numa_nodes is not None and len(s.kt_numa_nodes) != pools:
        yield _err("kt_numa_nodes", f"{len(s.kt_numa_nodes)} NUMA node ids for {pools} thread pools: the engine "
                   "fails at runtime", "give one node id per pool, or clear the list", check="numa")
    if host is None or not host.numa_node_ids:
        return
    for node in s.kt_numa_nodes or ():
        if node not in host.numa_node_ids:
            yield _on_host(host)("kt_numa_nodes", f"NUMA node {node} does not exist (this host has "
                                 f"{', '.join(map(str, host.numa_node_ids))})" + _sim_note(host),
                                 "use existing node ids", check="numa")
    if pools > len(host.numa_node_ids):
        yield _warn("kt_threadpool_count", f"{pools} thread pools on {len(host.numa_node_ids)} NUMA node(s): "
                    "pools will share a node's memory bandwidth", f"use {len(host.numa_node_ids)}",
                    [("kt_threadpool_count", len(host.numa_node_ids))], check="numa")


def check_gpus(s: LaunchSettings, shape: ModelShape | None, host: HostFacts | None) -> Iterator[Finding]:
    if s.tp_size > M3_MAX_TP and shape is not None and shape.num_kv_heads <= M3_MAX_TP:
        yield _err("tp_size", f"--tp-size {s.tp_size}: MiniMax-M3 supports at most TP{M3_MAX_TP}",
                   f"use {M3_MAX_TP} or fewer", [("tp_size", M3_MAX_TP)], check="tp")
    if host is None:
        return
    if host.gpu_count == 0:
        yield _err("tp_size", "no NVIDIA GPU found: the real engine cannot run here",
                   "use the simulated engine on this machine, or run on a Hopper GPU host", check="tp")
    elif s.tp_size > host.gpu_count:
        yield _err("tp_size", f"--tp-size {s.tp_size} but only {host.gpu_count} GPU(s)",
                   f"use --tp-size {host.gpu_count}", [("tp_size", host.gpu_count)], check="tp")
    cc = host.compute_capability
    if cc is not None and cc != (9, 0) and (s.quantization == "mxfp8" or s.kt_method == "MXFP8"):
        yield _warn("quantization", f"GPU compute capability {cc[0]}.{cc[1]}: the MXFP8 path is built for SM90 "
                    "Hopper (H100/H200/H20/H800)", "run on a Hopper GPU", check="sm90")


def check_memory(s: LaunchSettings, shape: ModelShape | None, host: HostFacts | None) -> Iterator[Finding]:
    fractions = (s.mem_fraction_static, s.kt_gpu_experts_ratio)
    if shape is None or host is None or not host.gpu_bytes or s.tp_size < 1 or not all(
            math.isfinite(v) for v in fractions if v is not None):
        return  # no model, no GPU facts, or a TP size / NaN / infinity the range rule already reports
    experts = gpu_experts_per_layer(s.kt_num_gpu_experts, s.kt_gpu_experts_ratio, shape)
    plan = memory_plan(shape, tp=s.tp_size, gpu_bytes=host.gpu_bytes, mem_fraction=s.mem_fraction_static,
                       gpu_experts=experts, prefill_threshold_on=s.kt_gpu_prefill_token_threshold is not None)
    ceiling = max_gpu_experts(shape, tp=s.tp_size, gpu_bytes=host.gpu_bytes, mem_fraction=plan.mem_fraction)
    weights = f"{plan.weight_bytes / GB:.1f} GB of weights per GPU"
    if plan.verdict == "oom_at_load":
        yield _err("kt_num_gpu_experts", f"{experts} GPU experts per layer need {weights}, more than a "
                   f"{host.gpu_bytes / GB:.0f} GB GPU holds: CUDA out of memory while loading",
                   f"lower --kt-num-gpu-experts to {ceiling}", [("kt_num_gpu_experts", ceiling)], check="memory")
    elif plan.verdict == "kv_pool_too_small":
        yield _err("mem_fraction_static", f"{weights} leave no KV cache inside mem-fraction-static "
                   f"{plan.mem_fraction:.2f}: 'Not enough memory' at start",
                   f"raise --mem-fraction-static or lower --kt-num-gpu-experts to {ceiling}",
                   [("kt_num_gpu_experts", ceiling)], check="memory")
    elif plan.verdict == "oom_outside_pool":
        need = (plan.prefill_buffer_bytes + 3 * GB) / host.gpu_bytes
        lower = round(max(0.05, 1 - need - 0.01), 2)
        yield _err("mem_fraction_static", f"mem-fraction-static {plan.mem_fraction:.2f} leaves "
                   f"{plan.outside_pool_bytes / GB:.1f} GB outside the static pool, less than activations and the "
                   f"{plan.prefill_buffer_bytes / GB:.1f} GB layerwise-prefill buffer need: CUDA out of memory",
                   f"lower --mem-fraction-static to {lower}", [("mem_fraction_static", lower)], check="memory")
    elif s.mem_fraction_static is None:
        yield _warn("mem_fraction_static", "--mem-fraction-static is unset: sglang picks one without knowing "
                    "about the GPU experts", f"set it (the reference presets use {default_mem_fraction(s.tp_size)} at "
                    f"TP{s.tp_size})", [("mem_fraction_static", default_mem_fraction(s.tp_size))], check="memory")
    if host.ram_bytes and not host.simulated:
        need = model_footprint(shape).cpu_expert_bytes * CPU_RAM_HEADROOM
        if need > host.ram_bytes:
            yield _err("kt_weight_path", f"kt-kernel holds every routed expert in RAM: about {need / GB:.0f} GB, "
                       f"but the host has {host.ram_bytes / GB:.0f} GB", "use a host with more RAM or a smaller "
                       "quantization of the experts", check="ram")


def check_serving(s: LaunchSettings, shape: ModelShape | None, host: HostFacts | None) -> Iterator[Finding]:
    try:
        ipaddress.ip_address(s.host)
    except ValueError:
        if not _HOSTNAME.match(s.host or ""):
            yield _err("host", f"--host {s.host!r} is not an IP address or host name", "use 0.0.0.0 or 127.0.0.1",
                       check="host")
    if s.host not in ("127.0.0.1", "localhost", "::1") and not s.api_key:
        yield _warn("api_key", f"the engine listens on {s.host} without --api-key: anyone who can reach the port "
                    "can use it", "set an API key, or listen on 127.0.0.1", check="api_key")
    if s.tool_call_parser != "minimax-m3" and shape is not None and shape.model_type.startswith("minimax_m3"):
        yield _warn("tool_call_parser", "MiniMax-M3 tool calls need --tool-call-parser minimax-m3",
                    "set it", [("tool_call_parser", "minimax-m3")], check="parsers")
    if s.reasoning_parser != "minimax-m3" and shape is not None and shape.model_type.startswith("minimax_m3"):
        yield _warn("reasoning_parser", "without --reasoning-parser minimax-m3 the thinking arrives inline in "
                    "the answer", "set it", [("reasoning_parser", "minimax-m3")], check="parsers")
    if shape is not None and shape.model_type.startswith("minimax_m3") and not s.trust_remote_code:
        yield _err("trust_remote_code", "MiniMax-M3 needs --trust-remote-code", "turn it on",
                   [("trust_remote_code", True)], check="trust_remote_code")


def check_monitoring(s: LaunchSettings, shape: ModelShape | None, host: HostFacts | None) -> Iterator[Finding]:
    if s.record_kt_gpu_expert_distribution and not s.expert_distribution_recorder_mode:
        yield _err("record_kt_gpu_expert_distribution", "--record-kt-gpu-expert-distribution needs a recorder "
                   "mode", "set --expert-distribution-recorder-mode stat",
                   [("expert_distribution_recorder_mode", "stat")], check="recorder")
    if s.kt_expert_placement_strategy == "frequency" and not s.init_expert_location:
        yield _err("init_expert_location", "frequency placement needs --init-expert-location (a recorder dump "
                   "with logical_count)", "record a dump first, or use uniform placement",
                   [("kt_expert_placement_strategy", "uniform")], check="placement")
    if s.kt_enable_dynamic_expert_update:
        yield from _dynamic_update(s)
    if s.expert_distribution_recorder_buffer_size == 0:
        yield _err("expert_distribution_recorder_buffer_size", "a recorder buffer of 0 forward passes records "
                   "nothing", "use 2000, or -1 for unbounded",
                   [("expert_distribution_recorder_buffer_size", 2000)], check="recorder")


def _dynamic_update(s: LaunchSettings) -> Iterator[Finding]:
    # sglang-kt 0.7.2 (kt_ep_wrapper.py) replaces a layer's GPU experts only inside the layerwise prefill of a
    # batch of at least --kt-gpu-prefill-token-threshold tokens, copying the weights by the checkpoint's format:
    # fp8 block, fp8 channel, bf16, else INT4 Marlin (MXFP4 is skipped; MXFP8 is not, so it takes the INT4 copy)
    if s.kt_method == "MXFP8":
        yield _warn("kt_enable_dynamic_expert_update", "--kt-enable-dynamic-expert-update on an MXFP8 checkpoint "
                    "(MiniMax-M3): sglang-kt 0.7.2 copies the new GPU experts with its INT4 path, which reads "
                    "weights an MXFP8 layer does not have, at the first prefill past --kt-gpu-prefill-token-threshold",
                    "turn it off and use --kt-expert-placement-strategy frequency (python -m launch placement plan)",
                    [("kt_enable_dynamic_expert_update", False)], check="placement")
    elif not s.kt_gpu_prefill_token_threshold:
        yield _warn("kt_enable_dynamic_expert_update", "--kt-enable-dynamic-expert-update does nothing without "
                    "--kt-gpu-prefill-token-threshold: the engine swaps GPU experts only during the layerwise "
                    "prefill of a batch that long", f"set --kt-gpu-prefill-token-threshold {DYNAMIC_UPDATE_THRESHOLD}",
                    [("kt_gpu_prefill_token_threshold", DYNAMIC_UPDATE_THRESHOLD)], check="placement")


def check_extra_args(s: LaunchSettings, shape: ModelShape | None, host: HostFacts | None) -> Iterator[Finding]:
    try:
        args = split_extra_args(s.extra_args)
    except CommandError as exc:
        yield _err("extra_args", str(exc), "balance the quotes", check="extra_args")
        return
    for arg in args:
        if not arg.startswith("--"):
            continue
        flag = arg.split("=", 1)[0]
        if flag not in SGLANG_FLAGS:
            yield _err("extra_args", f"{flag} is not a flag of sglang-kt 0.7.2", "check the spelling, or remove "
                       "it", check="extra_args")
        elif flag in FIELD_BY_FLAG:
            yield _err("extra_args", f"{flag} is a launch setting of its own: set it there, not in the extra "
                       "arguments", f"move it to the {FIELD_BY_FLAG[flag].name} field", check="extra_args")
    if any(a and not a.startswith("-") for a in args[:1]):
        yield _err("extra_args", f"extra arguments must start with a flag, not {args[0]!r}",
                   "put the --flag before its value", check="extra_args")


RULES: tuple[Rule, ...] = (check_values, check_kt_active, check_cpu, check_numa, check_gpus, check_memory,
                           check_serving, check_monitoring, check_extra_args)


def validate(settings: LaunchSettings, shape: ModelShape | None = None,
             host: HostFacts | None = None) -> list[Finding]:
    """Every finding of every rule; never raises for any LaunchSettings value."""
    return [finding for rule in RULES for finding in rule(settings, shape, host)]
