"""The running simulated engine: its plan, scheduler, metrics and expert recorder, and its readiness."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from launch.sim.logs import EngineLog
from launch.sim.metrics import EngineMetrics
from launch.sim.pacing import Pacing
from launch.sim.plan import ServingPlan
from launch.sim.recorder import Recorder, create_recorder
from launch.sim.routing import RoutingModel
from launch.sim.scheduler import Scheduler

ROUTING_SEED = 0
SIM_VERSION = "0.7.2-m3ui-sim"  # sglang-kt's version, marked as the simulation


@dataclass
class Engine:
    plan: ServingPlan
    log: EngineLog
    scheduler: Scheduler
    metrics: EngineMetrics
    recorder: Recorder | None
    ready: bool = field(default=False)  # /health answers 200 once the warmup request went through

    @property
    def model_name(self) -> str:
        return self.plan.served_model_name


def build_engine(plan: ServingPlan, log: EngineLog, gpu_mask: np.ndarray) -> Engine:
    """`gpu_mask`: launch.placement.gpu_expert_mask for the plan's settings and shape."""
    metrics = EngineMetrics(plan.served_model_name, plan.max_total_num_tokens, plan.settings.enable_metrics)
    recorder = create_recorder(plan.settings, plan.shape, gpu_mask)
    routing = RoutingModel(plan.shape, gpu_mask, ROUTING_SEED)
    pacing = Pacing(plan.hardware, plan.settings.kt_gpu_prefill_token_threshold)
    scheduler = Scheduler(plan, pacing, routing, recorder, metrics, log)
    return Engine(plan, log, scheduler, metrics, recorder)
