"""The chosen model's config.json, read once per version of the file, and the summary an operator reads."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from launch.advice import Figure
from launch.findings import Finding
from launch.model_config import ModelShape
from launch.preflight import check_model_path
from launch.settings import LaunchSettings
from launch.sizing import GB, model_footprint


@dataclass(frozen=True)
class ModelReading:
    path: str | None
    shape: ModelShape | None
    findings: tuple[Finding, ...]  # why there is no shape, when there is none


def _version(path: str | None) -> tuple[str | None, int | None]:
    if not path:
        return path, None
    try:
        return path, (Path(path).expanduser() / "config.json").stat().st_mtime_ns
    except OSError:
        return path, None


class ModelShapes:
    """config.json readings keyed by (folder, file mtime): typing in other fields never re-reads it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: dict[tuple[str | None, int | None], ModelReading] = {}

    def read(self, settings: LaunchSettings) -> ModelReading:
        key = _version(settings.model_path)
        with self._lock:
            if key not in self._cache:
                if len(self._cache) > 32:
                    self._cache.clear()
                shape, findings = check_model_path(settings)
                self._cache[key] = ModelReading(settings.model_path, shape, tuple(findings))
            return self._cache[key]


def model_summary(shape: ModelShape) -> tuple[Figure, ...]:
    """What config.json says about the model, in the operator's terms."""
    dense = shape.num_layers - shape.num_moe_layers
    first = f", from layer {shape.first_moe_layer}" if shape.num_moe_layers else ""
    fp = model_footprint(shape)
    return (
        Figure("model type", shape.model_type),
        Figure("layers", f"{shape.num_layers} ({shape.num_moe_layers} MoE{first}; {dense} dense)"),
        Figure("routed experts per MoE layer", f"{shape.num_routed_experts}"
               + (f" + {shape.num_shared_experts} shared" if shape.num_shared_experts else "")),
        Figure("experts per token (top-k)", str(shape.experts_per_token)),
        Figure("quantization", shape.quant_method or "none (bf16)"),
        Figure("context length", f"{shape.max_positions:,} tokens" if shape.max_positions else "not stated"),
        Figure("attention", f"{shape.num_heads} heads, {shape.num_kv_heads} KV heads, head dim {shape.head_dim}"),
        Figure("hidden size / expert size", f"{shape.hidden_size} / {shape.moe_intermediate_size}"),
        Figure("all routed experts in CPU RAM", f"{fp.cpu_expert_bytes / GB:,.0f} GB"),
    )
