"""Hardware and model: the doctor report (GPUs, CPU, ISA and the kt-kernel build it implies, NUMA, RAM,
engine packages) and the chosen model's config.json summary."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import gradio as gr

from launch.advice import Figure
from launch.hardware import HardwareReport, format_report
from m3ui.admin.model_info import ModelReading, model_summary
from m3ui.ui.admin.markup import esc, figures_table, findings_list

GIB = 1024**3
_KT_PATH = {
    "amx": "AMX build: the fast path for CPU experts",
    "avx512_bf16": "AVX-512 BF16 build (no AMX: slower CPU experts)",
    "avx512_vbmi": "AVX-512 VBMI build (no AMX: slower CPU experts)",
    "avx512_vnni": "AVX-512 VNNI build (no AMX: slower CPU experts)",
    "avx512_base": "AVX-512 build (no AMX: slower CPU experts)",
    "avx2": "AVX2 build (the slowest supported path)",
    "none": "none: kt-kernel has no build for this CPU (needs AVX2+FMA)",
    "unknown": "unknown (CPU flags unreadable)",
}


@dataclass
class SummaryPanel:
    hardware: gr.HTML
    redetect: gr.Button
    model: gr.HTML


def _gib(n: int | None) -> str:
    return "unknown" if n is None else f"{n / GIB:,.1f} GiB"


def hardware_facts(report: HardwareReport) -> tuple[Figure, ...]:
    gpu, cpu, mem, pk = report.gpu, report.cpu, report.memory, report.packages
    if gpu.gpus:
        kinds = Counter(f"{g.name}, {_gib(g.memory_total_bytes)}, sm_{g.compute_capability[0]}"
                        f"{g.compute_capability[1]}" for g in gpu.gpus)
        gpus = "; ".join(f"{n} × {k}" for k, n in kinds.items())
        gpus += f" (driver {gpu.driver_version}, CUDA {gpu.cuda_driver_version})" if gpu.driver_version else ""
    else:
        gpus = f"none: {gpu.error or gpu.status} (the simulated engine still runs)"
    flags = " ".join(sorted(cpu.isa_flags)) or "none of AVX2/FMA/AVX-512/AMX"
    mxfp8 = {True: "yes", False: "no", None: "unknown"}[cpu.mxfp8_capable]
    numa = ", ".join(f"node {n.id}: {len(n.cpus)} CPUs" for n in cpu.numa_nodes) or "unknown"
    versions = ", ".join(f"{k} {v}" for k, v in pk.versions.items() if v) or (pk.error or "none of them")
    return (
        Figure("GPUs", gpus),
        Figure("CPU", f"{cpu.model_name or 'unknown'}: {cpu.sockets or '?'} socket(s), {cpu.physical_cores or '?'} "
                      f"cores, {cpu.logical_cores or '?'} threads"),
        Figure("ISA", flags),
        Figure("kt-kernel path", f"{_KT_PATH.get(cpu.kt_kernel_isa, cpu.kt_kernel_isa)}; MXFP8 experts: {mxfp8}"),
        Figure("NUMA", f"{len(cpu.numa_nodes)} node(s): {numa}" if cpu.numa_nodes else "unknown"),
        Figure("RAM", f"{_gib(mem.total_bytes)} total, {_gib(mem.available_bytes)} available"),
        Figure(f"engine packages ({pk.python})", versions),
    )


def render_hardware(report: HardwareReport) -> str:
    lines = []
    for line in format_report(report).splitlines():
        stripped = line.strip()
        cls = "m3a-problem" if stripped.startswith("!") else "m3a-hint" if stripped.startswith("hint:") else ""
        lines.append(f'<div class="{cls}">{esc(line) or "&nbsp;"}</div>')
    return (figures_table(hardware_facts(report)) + '<details class="m3a-doctor"><summary>Full doctor report '
            '(<code>python -m launch doctor</code>)</summary><div class="m3a-pre">' + "".join(lines) +
            "</div></details>")


def render_model(reading: ModelReading) -> str:
    where = f'<div class="m3a-dim">config.json of <code>{esc(reading.path or "—")}</code></div>'
    if reading.shape is None:
        return where + findings_list(reading.findings, empty="No model chosen.")
    return where + figures_table(model_summary(reading.shape))


def render_model_brief(reading: ModelReading) -> str:
    """One line of chips under the model path: what the form's sizing works from."""
    if reading.shape is None:
        return ""
    chips = "".join(f'<span class="m3a-chip" title="{esc(f.label)}">{esc(f.label)}: {esc(f.value)}</span>'
                    for f in model_summary(reading.shape)[1:6])
    return f'<div class="m3a-chips" data-model-type="{esc(reading.shape.model_type)}">{chips}</div>'


def build_summary_panel() -> SummaryPanel:
    with gr.Row(equal_height=False):
        with gr.Column(scale=3), gr.Group(elem_classes=["m3a-panel"]):
            gr.HTML('<div class="m3a-panel-title">This machine</div>')
            hardware = gr.HTML('<div class="m3a-empty">Detecting…</div>', elem_id="m3-hardware")
            redetect = gr.Button("Detect again", size="sm", elem_classes=["m3a-action"], elem_id="m3-redetect")
        with gr.Column(scale=2), gr.Group(elem_classes=["m3a-panel"]):
            gr.HTML('<div class="m3a-panel-title">Model</div>')
            model = gr.HTML(elem_id="m3-model")
    return SummaryPanel(hardware, redetect, model)
