"""The live review of the form: every cheap check, the command preview and the sizing advice, at each edit.

Cheap means no probe: the model's config.json (cached per file version), folder checks, the pure
validation rules and the command builder. The port, the engine's packages and fresh hardware facts are
the preflight's (on demand and before every start).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from launch.advice import Advice, SizingInputs, advise
from launch.command import CommandError, Engine, build_command, key_on_argv
from launch.findings import Finding, has_errors
from launch.model_config import ModelShape
from launch.preflight import check_paths
from launch.settings import LaunchSettings
from launch.sizing import MemoryPlan, gpu_experts_per_layer, memory_plan
from launch.validation import HostFacts, validate
from m3ui.admin.form import FormReading
from m3ui.admin.host import HostSurvey
from m3ui.admin.model_info import ModelShapes

Change = tuple[str, Any]
KEY_ON_ARGV = Finding(
    "warning", "api_key", "The API key will be on the engine's command line, where any user of this computer "
    "can read it (ps): the extra arguments pass their own --config file, and sglang reads only one.",
    fix="Put `api-key: ...` into that YAML file and leave this field empty, or drop --config from the extra "
        "arguments (m3ui then hands the key over in a private file).", check="secrets")


@dataclass(frozen=True)
class Review:
    settings: LaunchSettings
    engine: Engine
    findings: tuple[Finding, ...]
    shape: ModelShape | None
    host: HostFacts | None
    command_text: str | None  # what `python -m launch command` prints for these settings
    advice: tuple[Advice, ...]
    advice_note: str | None  # why there is no advice, when there is none

    @property
    def blocking(self) -> bool:
        return has_errors(self.findings)

    def for_field(self, name: str) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.field == name)

    @property
    def fixes(self) -> tuple[Change, ...]:
        """Every suggested setting change of the findings, one per field (the first finding's wins)."""
        out: dict[str, Any] = {}
        for finding in self.findings:
            for name, value in finding.changes:
                out.setdefault(name, value)
        return tuple(out.items())

    @property
    def advice_changes(self) -> tuple[Change, ...]:
        return tuple((a.field, a.value) for a in self.advice)


def review_form(reading: FormReading, engine: Engine, survey: HostSurvey, shapes: ModelShapes) -> Review:
    settings = reading.settings
    model = shapes.read(settings)
    findings = list(reading.errors) + list(model.findings) + check_paths(settings, engine)
    try:
        host: HostFacts | None = survey.facts(settings, engine)
    except ValueError as exc:  # e.g. an M3UI_SIM_* variable that is not a number
        host = None
        findings.append(Finding("error", None, f"hardware unknown: {exc}", check="host"))
    findings += validate(settings, model.shape, host)
    command_text = None
    try:
        command_text = build_command(settings, engine).shell_text()
        if key_on_argv(settings):
            findings.append(KEY_ON_ARGV)
    except CommandError as exc:
        if not any(f.field == "extra_args" for f in findings):
            findings.append(Finding("error", "extra_args", str(exc), check="extra_args"))
    advice, note = _advice(settings, model.shape, host)
    return Review(settings, engine, tuple(findings), model.shape, host, command_text, advice, note)


def sizing_inputs(settings: LaunchSettings, host: HostFacts) -> SizingInputs:
    assert host.gpu_bytes
    return SizingInputs(
        tp=max(1, settings.tp_size), gpu_bytes=host.gpu_bytes, mem_fraction=settings.mem_fraction_static,
        physical_cores=host.physical_cores, numa_nodes=len(host.numa_node_ids) or None, ram_bytes=host.ram_bytes,
        prefill_threshold_on=settings.kt_gpu_prefill_token_threshold is not None)


def _advice(settings: LaunchSettings, shape: ModelShape | None,
            host: HostFacts | None) -> tuple[tuple[Advice, ...], str | None]:
    if shape is None:
        return (), "Choose a model folder with config.json: sizing needs the model's dimensions."
    if host is None or not host.gpu_bytes:
        return (), "No GPU memory is known for this engine (no NVIDIA GPU detected): sizing needs it."
    return advise(shape, sizing_inputs(settings, host)), None


def what_if(review: Review, gpu_experts: int) -> MemoryPlan | None:
    """Per-GPU memory of the reviewed settings with `gpu_experts` routed experts per layer on the GPU."""
    if review.shape is None or review.host is None or not review.host.gpu_bytes:
        return None
    s = review.settings
    experts = gpu_experts_per_layer(gpu_experts, None, review.shape)
    return memory_plan(review.shape, tp=max(1, s.tp_size), gpu_bytes=review.host.gpu_bytes,
                       mem_fraction=s.mem_fraction_static, gpu_experts=experts,
                       prefill_threshold_on=s.kt_gpu_prefill_token_threshold is not None)


def current_gpu_experts(review: Review) -> int:
    s = review.settings
    if review.shape is None:
        return s.kt_num_gpu_experts or 0
    return gpu_experts_per_layer(s.kt_num_gpu_experts, s.kt_gpu_experts_ratio, review.shape)
