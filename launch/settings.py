"""The launch settings: one typed table of every engine flag m3ui drives.

Each field of `LaunchSettings` carries its flag name, kind, help, group, choices and range in its
metadata. The dataclass default is sglang-kt 0.7.2's own default (`sglang/srt/server_args.py`), so a
field left at its default is a flag the engine would not need. The CLI, the admin form, validation,
the command builder, profiles and the simulated engine's argument parser all derive from this table.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Literal

Kind = Literal["str", "path", "secret", "int", "float", "bool", "int_list"]
Group = Literal["model", "kt", "gpu", "memory", "serving", "parsers", "monitoring", "advanced"]

GROUP_TITLES: dict[Group, str] = {
    "model": "Model",
    "kt": "KT-Kernel / CPU experts",
    "gpu": "GPU / parallelism",
    "memory": "Memory",
    "serving": "Serving",
    "parsers": "Parsers",
    "monitoring": "Monitoring",
    "advanced": "Advanced",
}

# Lists copied from the 0.7.2 wheels; tests/test_contract_wheel.py proves each against the source.
KT_METHODS = (
    "AMXINT4", "AMXINT8", "RAWINT4", "FP8", "BF16", "FP8_PERCHANNEL", "GPTQ_INT4", "SYCL_GPTQ_INT4",
    "MXFP4", "NVFP4", "MXFP8", "LLAMAFILE", "MOE_INT4", "MOE_INT8",
)
PLACEMENT_STRATEGIES = ("uniform", "frequency", "front-loading", "random")
QUANTIZATIONS = (
    "awq", "fp8", "mxfp8", "gptq", "marlin", "gptq_marlin", "awq_marlin", "bitsandbytes", "gguf",
    "modelopt", "modelopt_fp8", "modelopt_fp4", "petit_nvfp4", "w8a8_int8", "w8a8_fp8", "moe_wna16",
    "qoq", "w4afp8", "mxfp4", "auto-round", "compressed-tensors", "modelslim", "quark_int4fp8_moe",
)
MOE_RUNNER_BACKENDS = (
    "auto", "deep_gemm", "triton", "triton_kernel", "flashinfer_trtllm", "flashinfer_cutlass",
    "flashinfer_mxfp4", "flashinfer_cutedsl", "cutlass",
)
TOOL_CALL_PARSERS = (
    "minimax-m3", "minimax-m2", "deepseekv3", "deepseekv31", "deepseekv32", "deepseekv4", "glm",
    "glm45", "glm47", "gpt-oss", "kimi_k2", "llama3", "mistral", "pythonic", "qwen", "qwen25",
    "qwen3_coder", "hermes",
)
REASONING_PARSERS = (
    "minimax-m3", "minimax", "minimax-append-think", "deepseek-r1", "deepseek-v3", "glm45",
    "gpt-oss", "kimi", "kimi_k2", "qwen3", "qwen3-thinking", "step3",
)
# `stat_approx` exists in sglang but needs DeepEP, which a KT hybrid never runs.
RECORDER_MODES = ("stat", "per_pass", "per_token")


@dataclass(frozen=True)
class FlagSpec:
    """What the engine's argument parser knows of one flag, plus how m3ui presents it."""

    flag: str
    kind: Kind
    help: str
    group: Group
    choices: tuple[str, ...] = ()
    lo: float | None = None
    hi: float | None = None
    # Emitted even when equal to sglang's default: the seed's commands spell these out.
    always: bool = False


def _opt(default: Any, flag: str, kind: Kind, help: str, group: Group, **spec: Any) -> Any:
    return field(default=default, metadata={"spec": FlagSpec(flag, kind, help, group, **spec)})


@dataclass(frozen=True)
class LaunchSettings:
    """Every engine flag m3ui drives, in the order the command line spells them."""

    model_path: str | None = _opt(
        None, "--model-path", "path", "Folder with the model's config.json and weights.", "model", always=True)
    kt_weight_path: str | None = _opt(
        None, "--kt-weight-path", "path", "Folder with the CPU expert weights; KT is only active when set.", "kt")
    kt_method: str | None = _opt(
        None, "--kt-method", "str", "kt-kernel backend for CPU experts (MXFP8 for M3).", "kt", choices=KT_METHODS)
    kt_cpuinfer: int | None = _opt(
        None, "--kt-cpuinfer", "int", "CPU inference threads; usually the physical core count.", "kt", lo=1,
        hi=4096)
    kt_threadpool_count: int | None = _opt(
        2, "--kt-threadpool-count", "int", "Thread pools, one per NUMA node.", "kt", lo=1, hi=64, always=True)
    kt_numa_nodes: tuple[int, ...] | None = _opt(
        None, "--kt-numa-nodes", "int_list", "NUMA node id for each thread pool (as many as pools).", "kt")
    kt_num_gpu_experts: int | None = _opt(
        None, "--kt-num-gpu-experts", "int", "Routed experts kept on the GPU per MoE layer.", "kt", lo=0, hi=4096)
    kt_gpu_experts_ratio: float | None = _opt(
        None, "--kt-gpu-experts-ratio", "float", "Share of routed experts on the GPU; overrides the count.", "kt",
        lo=0.0, hi=1.0)
    kt_gpu_prefill_token_threshold: int | None = _opt(
        None, "--kt-gpu-prefill-token-threshold", "int",
        "Prompts longer than this take the layerwise full-GPU prefill path (unset: off).", "kt", lo=1,
        hi=10_000_000)
    kt_max_deferred_experts_per_token: int | None = _opt(
        None, "--kt-max-deferred-experts-per-token", "int", "CPU experts a token may defer to the next layer.",
        "kt", lo=0, hi=64)
    kt_expert_placement_strategy: str = _opt(
        "uniform", "--kt-expert-placement-strategy", "str", "Which experts go to the GPU.", "kt",
        choices=PLACEMENT_STRATEGIES)
    init_expert_location: str | None = _opt(
        None, "--init-expert-location", "path", "Recorder .pt with logical_count; used by frequency placement.",
        "kt")
    kt_enable_dynamic_expert_update: bool = _opt(
        False, "--kt-enable-dynamic-expert-update", "bool", "Move hot experts to the GPU while serving.", "kt")
    tp_size: int = _opt(1, "--tp-size", "int", "Tensor-parallel GPUs.", "gpu", lo=1, hi=64, always=True)
    quantization: str | None = _opt(
        None, "--quantization", "str", "Weight quantization of the GPU part.", "gpu", choices=QUANTIZATIONS)
    moe_runner_backend: str = _opt(
        "auto", "--moe-runner-backend", "str", "Kernel for the GPU experts.", "gpu", choices=MOE_RUNNER_BACKENDS)
    trust_remote_code: bool = _opt(
        False, "--trust-remote-code", "bool", "Allow the model's own code (needed for M3).", "model")
    host: str = _opt("127.0.0.1", "--host", "str", "Address the engine listens on.", "serving", always=True)
    port: int = _opt(30000, "--port", "int", "Port the engine listens on.", "serving", lo=1, hi=65535, always=True)
    mem_fraction_static: float | None = _opt(
        None, "--mem-fraction-static", "float", "Share of GPU memory for weights and KV cache.", "memory",
        lo=0.05, hi=0.99)
    chunked_prefill_size: int | None = _opt(
        None, "--chunked-prefill-size", "int", "Most prompt tokens prefilled in one step.", "memory", lo=-1,
        hi=1_048_576)
    cuda_graph_max_bs: int | None = _opt(
        None, "--cuda-graph-max-bs", "int", "Largest batch captured in a CUDA graph.", "memory", lo=1, hi=4096)
    max_running_requests: int | None = _opt(
        None, "--max-running-requests", "int", "Most requests decoded at once.", "memory", lo=1, hi=100_000)
    max_total_tokens: int | None = _opt(
        None, "--max-total-tokens", "int", "Cap on the KV pool in tokens.", "memory", lo=1, hi=100_000_000)
    tool_call_parser: str | None = _opt(
        None, "--tool-call-parser", "str", "Turns the model's tool-call text into tool_calls.", "parsers",
        choices=TOOL_CALL_PARSERS)
    reasoning_parser: str | None = _opt(
        None, "--reasoning-parser", "str", "Splits thinking into reasoning_content.", "parsers",
        choices=REASONING_PARSERS)
    served_model_name: str | None = _opt(
        None, "--served-model-name", "str", "Model name clients ask for.", "serving")
    api_key: str | None = _opt(
        None, "--api-key", "secret", "Bearer key the engine requires (health stays open).", "serving")
    enable_metrics: bool = _opt(False, "--enable-metrics", "bool", "Serve Prometheus /metrics.", "monitoring")
    expert_distribution_recorder_mode: str | None = _opt(
        None, "--expert-distribution-recorder-mode", "str", "Record expert routing (needed by the expert panel).",
        "monitoring", choices=RECORDER_MODES)
    expert_distribution_recorder_buffer_size: int | None = _opt(
        None, "--expert-distribution-recorder-buffer-size", "int",
        "Forward passes kept between dumps (-1: unbounded).", "monitoring", lo=-1, hi=100_000_000)
    record_kt_gpu_expert_distribution: bool = _opt(
        False, "--record-kt-gpu-expert-distribution", "bool", "Also dump which experts are GPU-resident.",
        "monitoring")
    extra_args: str = field(default="", metadata={"spec": None})

    def replace(self, **changes: Any) -> LaunchSettings:
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class SettingField:
    """One flag-bearing field of LaunchSettings, with its spec and default."""

    name: str
    spec: FlagSpec
    default: Any


def setting_fields() -> tuple[SettingField, ...]:
    """The flag-bearing fields in command-line order (extra_args is not one of them)."""
    return _FIELDS


_FIELDS = tuple(
    SettingField(f.name, f.metadata["spec"], f.default)
    for f in dataclasses.fields(LaunchSettings)
    if f.metadata.get("spec") is not None
)
FIELD_BY_NAME = {f.name: f for f in _FIELDS}
FIELD_BY_FLAG = {f.spec.flag: f for f in _FIELDS}


class SettingsError(ValueError):
    """A value that cannot be held by a field at all (wrong type, unknown field)."""


def coerce(name: str, value: Any) -> Any:
    """Convert a raw value (JSON scalar, form value or CLI text) into the field's Python type."""
    if name == "extra_args":
        if value is None:
            return ""
        if not isinstance(value, str):
            raise SettingsError("extra_args must be text")
        return value
    fld = FIELD_BY_NAME.get(name)
    if fld is None:
        raise SettingsError(f"unknown setting {name!r}")
    kind = fld.spec.kind
    if value is None or (isinstance(value, str) and value.strip() == "" and kind != "bool"):
        if fld.default is not None and kind != "bool":
            raise SettingsError(f"{fld.spec.flag} needs a value")
        return False if kind == "bool" else None
    try:
        if kind == "bool":
            return _to_bool(value)
        if kind == "int":
            return _to_int(value)
        if kind == "float":
            number = float(value) if not isinstance(value, bool) else math.nan
            if not math.isfinite(number):  # "nan"/"inf" parse as floats but are no setting's value
                raise ValueError
            return number
        if kind == "int_list":
            items = value.replace(",", " ").split() if isinstance(value, str) else list(value)
            return tuple(_to_int(v) for v in items) or None
        if not isinstance(value, str):
            raise ValueError
        return value.strip() if kind != "secret" else value
    except (TypeError, ValueError):
        raise SettingsError(f"{fld.spec.flag}: {value!r} is not a valid {kind}") from None


def _to_int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError
        return int(value)
    return int(str(value).strip())


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ValueError


def from_mapping(values: dict[str, Any], base: LaunchSettings | None = None) -> LaunchSettings:
    """Build settings from a mapping of field names (a profile, a form); unknown keys are an error."""
    changes = {name: coerce(name, value) for name, value in values.items()}
    return (base or LaunchSettings()).replace(**changes)


def to_mapping(settings: LaunchSettings) -> dict[str, Any]:
    """JSON-ready values of every field (tuples become lists)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(settings):
        value = getattr(settings, f.name)
        out[f.name] = list(value) if isinstance(value, tuple) else value
    return out


def parse_assignment(text: str) -> tuple[str, Any]:
    """`field=value` (CLI `--set`); field may be the name or the flag (`kt_cpuinfer` or `kt-cpuinfer`)."""
    key, sep, raw = text.partition("=")
    if not sep:
        raise SettingsError(f"--set needs field=value, got {text!r}")
    name = key.strip().lstrip("-").replace("-", "_")
    return name, coerce(name, raw)
