"""Placement advice on the Monitor's own window of recorder dumps: the planner (`launch.placement_plan`) run on
what the engine served in the last minutes, refreshed at most every REFRESH_S (a plan takes about a second).

Each dump of the window is one segment of the recording; the GPU experts the engine reported (or assumed
from the launch settings) give the current placement and its N. VRAM: the launch settings' TP size and
memory fraction, on the GPU memory the monitor sees (or the simulated engine's).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from launch.model_config import ModelShape, load_model_shape
from launch.placement_plan.predict import Hardware, PlacementPlan, plan_placement
from launch.placement_plan.recording import Recording
from launch.placement_plan.report import confidence, recommendation
from launch.settings import LaunchSettings
from launch.sim.config import load_sim_config
from m3ui.monitor.experts import ExpertSnapshot
from m3ui.monitor.gpu import GpuSnapshot

REFRESH_S = 30.0
MIN_SEGMENTS = 2


@dataclass(frozen=True, eq=False)
class PlacementAdvice:
    plan: PlacementPlan | None
    reason: str | None  # why there is no plan
    sentence: str = ""
    confidence: str = "low"


def model_shape_for(settings: LaunchSettings | None) -> ModelShape:
    """The launched model's shape; the bundled M3 one when its folder has no config.json (the simulated engine)."""
    path = settings.model_path if settings is not None else None
    return load_model_shape(path if path and (Path(path) / "config.json").is_file() else None)


def advise(segments: tuple[np.ndarray, ...], residency: np.ndarray | None, shape: ModelShape,
           hardware: Hardware) -> PlacementAdvice:
    """Plan on the window; a reason instead when the window cannot support one."""
    written = tuple(s for s in segments if s.any())
    if len(written) < MIN_SEGMENTS:
        return PlacementAdvice(None, "Placement advice needs a few recorder dumps with traffic: send some chats.")
    if residency is None:
        return PlacementAdvice(None, "Placement advice needs to know which experts sit on the GPU.")
    if written[0].shape != (shape.num_layers, shape.num_routed_experts):
        return PlacementAdvice(None, f"The dumps ({written[0].shape}) do not fit the launched model's shape.")
    moe = list(shape.moe_layer_ids)
    current = round(residency[moe].sum() / max(1, len(moe)))
    recording = Recording(written, len(written), len(written), False, residency)
    plan = plan_placement(recording, shape, current, hardware)
    return PlacementAdvice(plan, None, recommendation(plan, len(written)), confidence(plan, len(written)))


def hardware_for(settings: LaunchSettings | None, gpu: GpuSnapshot, simulated: bool) -> Hardware:
    """TP and memory fraction from the launch settings (TP1 when attached); GPU memory as the monitor sees
    it, or the simulated engine's."""
    tp = settings.tp_size if settings is not None else 1
    sizes = [g.memory_total_bytes for g in gpu.gpus if g.memory_total_bytes]
    gpu_bytes = load_sim_config(tp).gpu_bytes if simulated or not sizes else float(min(sizes))
    return Hardware(tp, gpu_bytes, settings.mem_fraction_static if settings else None,
                    settings.quantization if settings else None)


def advise_snapshot(experts: ExpertSnapshot, settings: LaunchSettings | None, gpu: GpuSnapshot,
                    simulated: bool) -> PlacementAdvice | None:
    """Advice for the Monitor's expert snapshot; None while the recorder is not recording."""
    if experts.status != "recording":
        return None
    try:
        return advise(experts.segments, experts.residency, model_shape_for(settings),
                      hardware_for(settings, gpu, simulated))
    except ValueError as error:  # a model folder the monitor cannot read, a bad GPU count
        return PlacementAdvice(None, f"No placement advice: {error}")


class AdviceCache:
    """One plan per REFRESH_S for the whole app, computed in the background so that no refresh waits for it
    (thread-safe). `get` answers at once with the latest advice and starts a new computation when that is due:
    REFRESH_S after a plan, at once after an answer without one (those are cheap)."""

    def __init__(self, refresh_s: float = REFRESH_S) -> None:
        self._refresh_s = refresh_s
        self._lock = threading.Lock()
        self._at = float("-inf")
        self._advice: PlacementAdvice | None = None
        self._busy = False

    def get(self, compute: Callable[[], PlacementAdvice | None]) -> PlacementAdvice | None:
        with self._lock:
            planned = self._advice is not None and self._advice.plan is not None
            if not self._busy and (not planned or time.monotonic() - self._at >= self._refresh_s):
                self._busy = True
                threading.Thread(target=self._compute, args=(compute,), name="placement-advice", daemon=True).start()
            return self._advice

    def _compute(self, compute: Callable[[], PlacementAdvice | None]) -> None:
        advice = self._advice
        try:
            advice = compute()
        finally:
            with self._lock:
                self._busy, self._advice, self._at = False, advice, time.monotonic()
