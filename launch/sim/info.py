"""The engine's self-descriptions: /server_info, /model_info, /v1/models, /v1/loads and /get_load bodies.

Shapes from entrypoints/http_server.py, v1_loads.py and scheduler_metrics_mixin.get_load. Server args are the
launch settings (their names are sglang's ServerArgs names) with the values sglang resolves at start, plus the
known sglang flags given outside the settings table. Every body says plainly that this engine is m3ui's simulation.
"""

from __future__ import annotations

import dataclasses
import time
from datetime import UTC, datetime
from typing import Any

from launch.sim.args import SimArgs
from launch.sim.engine import SIM_VERSION, Engine


def _passthrough_value(words: tuple[str, ...]) -> Any:
    if not words:
        return True
    values: list[Any] = []
    for word in words:
        for cast in (int, float):
            try:
                values.append(cast(word))
                break
            except ValueError:
                continue
        else:
            values.append(word)
    return values[0] if len(values) == 1 else values


def server_args(engine: Engine, args: SimArgs) -> dict[str, Any]:
    plan = engine.plan
    out: dict[str, Any] = {k: list(v) if isinstance(v, tuple) else v
                           for k, v in dataclasses.asdict(plan.settings).items() if k != "extra_args"}
    out.update(model_path=plan.model_path, tokenizer_path=plan.model_path,
               served_model_name=plan.served_model_name, mem_fraction_static=plan.memory.mem_fraction,
               chunked_prefill_size=plan.chunked_prefill_size, cuda_graph_max_bs=plan.cuda_graph_max_bs,
               context_length=None, max_prefill_tokens=16384, page_size=1, log_level="info")
    if engine.recorder is not None:  # sglang fills in the default buffer size once a mode is set
        out["expert_distribution_recorder_buffer_size"] = engine.recorder.buffer_size
    out.update({dest: _passthrough_value(words) for dest, words in args.passthrough})
    return out


def _memory_usage(engine: Engine) -> dict[str, Any]:
    plan = engine.plan
    gib = 1 << 30
    return {"weight": round(plan.memory.weight_bytes / gib, 2),
            "kvcache": round(plan.max_total_num_tokens * plan.memory.kv_bytes_per_token / gib, 2),
            "token_capacity": plan.max_total_num_tokens, "graph": round(plan.graph_bytes / gib, 2)}


def server_info(engine: Engine, args: SimArgs) -> dict[str, Any]:
    plan, hw = engine.plan, engine.plan.hardware
    base = server_args(engine, args)
    internal = {**base, "last_gen_throughput": round(engine.metrics.snapshot().gen_throughput, 2),
                "memory_usage": _memory_usage(engine),
                "effective_max_running_requests_per_dp": plan.max_running_requests}
    return {
        **base,
        "status": "ready",
        "max_total_num_tokens": plan.max_total_num_tokens,
        "max_req_input_len": plan.max_req_input_len,
        "internal_states": [internal],
        "version": SIM_VERSION,
        "simulated": True,
        "simulated_hardware": {"gpu_count": hw.gpu_count, "gpu_mem_gb": hw.gpu_mem_gb, "ram_gb": hw.ram_gb},
    }


def model_info(engine: Engine) -> dict[str, Any]:
    plan = engine.plan
    return {"model_path": plan.model_path, "tokenizer_path": plan.model_path, "is_generation": True,
            "preferred_sampling_params": None, "weight_version": "default", "has_image_understanding": False,
            "has_audio_understanding": False, "model_type": plan.shape.model_type,
            "architectures": [plan.architecture], "m3ui_simulated": True}


def model_card(engine: Engine, name: str) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": int(time.time()), "owned_by": "sglang", "root": name,
            "parent": None, "max_model_len": engine.plan.context_len, "m3ui_simulated": True}


def models(engine: Engine) -> dict[str, Any]:
    return {"object": "list", "data": [model_card(engine, engine.model_name)]}


def loads(engine: Engine) -> dict[str, Any]:
    plan = engine.plan
    snap = engine.metrics.snapshot()
    memory = _memory_usage(engine)
    load = {
        "dp_rank": 0, "num_running_reqs": snap.running, "num_waiting_reqs": snap.waiting,
        "num_used_tokens": snap.used_tokens, "max_total_num_tokens": plan.max_total_num_tokens,
        "token_usage": round(snap.token_usage, 4), "gen_throughput": round(snap.gen_throughput, 2),
        "cache_hit_rate": round(snap.cache_hit_rate, 4), "utilization": 0.0,
        "max_running_requests": plan.max_running_requests,
        "memory": {"weight_gb": memory["weight"], "kv_cache_gb": memory["kvcache"], "graph_gb": memory["graph"],
                   "token_capacity": plan.max_total_num_tokens},
        "disaggregation": {"mode": "null", "prefill_prealloc_queue_reqs": 0, "prefill_inflight_queue_reqs": 0,
                           "decode_prealloc_queue_reqs": 0, "decode_transfer_queue_reqs": 0,
                           "decode_retracted_queue_reqs": 0, "kv_transfer_speed_gb_s": 0.0,
                           "kv_transfer_latency_ms": 0.0},
        "queues": {"waiting": snap.waiting, "grammar": 0, "paused": 0, "retracted": 0},
        "num_total_reqs": snap.running + snap.waiting,
    }
    aggregate = {"total_running_reqs": snap.running, "total_waiting_reqs": snap.waiting,
                 "total_reqs": snap.running + snap.waiting, "avg_token_usage": load["token_usage"],
                 "avg_throughput": load["gen_throughput"], "avg_utilization": 0.0}
    return {"timestamp": datetime.now(UTC).isoformat(), "version": SIM_VERSION, "dp_rank_count": 1,
            "loads": [load], "aggregate": aggregate}


def get_load(engine: Engine) -> list[dict[str, Any]]:
    """`/get_load`: one GetLoadReqOutput per DP rank, as FastAPI encodes the dataclass (BaseReq's `rid` and
    `http_worker_ipc` first). sglang-router sums `num_tokens` over the ranks for its power-of-two policy."""
    snap = engine.metrics.snapshot()
    return [{"rid": None, "http_worker_ipc": None, "dp_rank": 0, "num_reqs": snap.running + snap.waiting,
             "num_waiting_reqs": snap.waiting, "num_tokens": snap.used_tokens, "ts_tic": time.perf_counter()}]
