"""The Monitor tab's headline (the five figures an operator looks at first) and its engine panel."""

from __future__ import annotations

from launch.supervisor import EngineState
from m3ui.engine_link import EngineStatus
from m3ui.monitor.engine import EngineSnapshot
from m3ui.monitor.experts import ExpertSnapshot
from m3ui.monitor.gpu import GpuSnapshot
from m3ui.monitor.sampler import MonitorSnapshot
from m3ui.ui.monitor.format import GIB, bar, count, esc, facts, gib, note, pct, per_second, tile

# why the GPU hit rate is unknown, in a few words (the expert panel says it in full)
_EXPERT_SHORT = {
    "pending": "waiting for the first sample", "no_engine": "no engine answering",
    "disabled": "expert recorder off", "unsupported_mode": "unsupported recorder mode",
    "no_local_folder": "engine's dumps are not local", "error": "recorder problem",
}


# GPU hit rates shown as high (green) or moderate; below HIT_FAIR a warning colour
HIT_GOOD, HIT_FAIR = 0.5, 0.2
RECORDER_WORDS = {"stat": "on (activations per expert)", "per_pass": "on (per forward pass)",
                  "per_token": "on (per token)"}


def engine_state(engine: EngineSnapshot, status: EngineStatus) -> tuple[str, str]:
    """(css state, one line) for the engine as the monitor sees it, with the supervisor's view when the
    engine does not answer (starting, failed, stopped)."""
    if engine.state == "ok":
        latency = f" · answers in {engine.latency_s * 1000:.0f} ms" if engine.latency_s is not None else ""
        return "ok", f"Serving {status.model or 'a model'} at {status.url}{latency}"
    if status.state is EngineState.STARTING and status.mode != "attached":  # one this app is loading
        return "starting", f"Starting ({status.progress:.0%}) — {status.phase_detail}"
    if engine.state in ("not_configured", "pending"):
        return "idle", status.label if engine.state == "not_configured" else "Waiting for the first sample"
    if engine.state == "slow":
        return "slow", f"Slow — {engine.reason}"
    if engine.state == "unreachable":
        return "down", f"Unreachable — {engine.reason}"
    return "down", f"Error — {engine.reason}"


def state_line(engine: EngineSnapshot, status: EngineStatus) -> str:
    state, text = engine_state(engine, status)
    return f'<div class="m3-state m3-state-{state}" data-engine-state="{state}"><i></i>{esc(text)}</div>'


def hit_level(rate: float) -> tuple[str, str]:
    """(css level, a word) for a GPU hit rate: only a high one is shown as good (green); a low one warns that the
    CPU serves most of the experts' work."""
    if rate >= HIT_GOOD:
        return "good", "high"
    if rate >= HIT_FAIR:
        return "fair", "moderate"
    return "low", "low: the CPU serves most expert work"


def _hit_tile(experts: ExpertSnapshot) -> str:
    rate = experts.hit_rate.rate if experts.hit_rate is not None else None
    if rate is not None:
        placed = " (placement from the settings)" if experts.residency_source == "assumed" else ""
        level, word = hit_level(rate)
        return tile("GPU expert hit rate", pct(rate, 1),
                    f"{word} · of {count(experts.activations)} routed activations, last "
                    f"{experts.window_s / 60:.0f} min{placed}",
                    f"m3-kpi-gpu m3-hit-{level}", "share of routed expert activations served by GPU-resident experts")
    if experts.status == "recording":
        why = "no activations yet: send a chat" if not experts.activations else "GPU residency unknown"
    else:
        why = _EXPERT_SHORT.get(experts.status, experts.status)
    return tile("GPU expert hit rate", "–", why, "m3-kpi-gpu m3-kpi-off")


def _gpu_memory_tile(gpu: GpuSnapshot) -> str:
    if gpu.status != "ok":
        return tile("GPU memory", "–", "no NVIDIA GPU here" if gpu.status == "no_gpu" else "GPUs not readable",
                    "m3-kpi-off", gpu.reason or "")
    used = sum(g.memory_used_bytes or 0 for g in gpu.gpus)
    total = sum(g.memory_total_bytes or 0 for g in gpu.gpus)
    engine = [g.engine_memory_bytes for g in gpu.gpus if g.engine_memory_bytes is not None]
    sub = f"{len(gpu.gpus)} GPU{'s' if len(gpu.gpus) != 1 else ''}"
    if engine:
        sub += f" · engine {gib(sum(engine))}"
    return tile("GPU memory", f"{used / GIB:.1f} / {gib(total)}", sub)


def headline(snapshot: MonitorSnapshot, status: EngineStatus) -> str:
    engine, cpu = snapshot.engine, snapshot.cpu
    load, rates = engine.load, engine.rates
    if load is not None:
        generation = tile("Generation", per_second(load.gen_throughput, "tok"),
                          f"prompt {per_second(rates.prompt_tokens_per_s, 'tok')}" if rates
                          else f"prefix cache hit {pct(load.cache_hit_rate)}")
        requests = tile("Requests running / queued", f"{load.running_requests} / {load.queued_requests}",
                        f"KV cache {pct(load.token_usage)} of {count(load.max_total_tokens)} tokens")
    else:
        generation = tile("Generation", "–", "engine not answering", "m3-kpi-off")
        requests = tile("Requests running / queued", "–", "engine not answering", "m3-kpi-off")
    kt = f"kt cores {pct(cpu.kt_percent / 100)} · " if cpu.kt_percent is not None else ""
    ram = f"RAM {cpu.ram_used_bytes / GIB:.0f} / {gib(cpu.ram_total_bytes)}"
    cpu_tile = (tile("CPU", pct(cpu.total_percent / 100), kt + ram) if cpu.status == "ok"
                else tile("CPU", "–", "waiting for the first sample", "m3-kpi-off"))
    tiles = _hit_tile(snapshot.experts) + generation + requests + _gpu_memory_tile(snapshot.gpu) + cpu_tile
    return f'{state_line(engine, status)}<div class="m3-kpis">{tiles}</div>'


def engine_panel(engine: EngineSnapshot, status: EngineStatus) -> str:
    info, load, rates = engine.info, engine.load, engine.rates
    rows: list[tuple[str, str]] = []
    if load is not None:
        rows += [
            ("Running requests", f"{load.running_requests} of max {load.max_running_requests}"),
            ("Queued requests", str(load.queued_requests)),
            ("Generation", per_second(load.gen_throughput, "tok")),
            ("Prefix cache hit rate", pct(load.cache_hit_rate)),
            ("KV cache", f"{count(load.used_tokens)} / {count(load.max_total_tokens)} tokens"),
        ]
        if load.dp_ranks > 1:
            rows.append(("Data-parallel ranks", str(load.dp_ranks)))
    if rates is not None:
        ttft = f"{rates.mean_ttft_s:.2f} s" if rates.mean_ttft_s is not None else "–"
        rows += [("Prompt tokens", per_second(rates.prompt_tokens_per_s, "tok")),
                 ("Requests finished", per_second(rates.requests_per_s, "req")), ("Mean time to first token", ttft)]
    if info is not None:
        rows += [("Model", info.served_model_name or "–"), ("Version", info.version or "–"),
                 ("Expert recorder", RECORDER_WORDS.get(info.recorder_mode or "", info.recorder_mode or "off"))]
    if load is not None:
        body = f'<div class="m3-gauge"><span>KV cache {pct(load.token_usage)}</span>{bar(load.token_usage, "kv")}</div>'
    else:
        body = note("empty", engine_state(engine, status)[1], "No engine figures.")
    body += facts(rows)
    if info is not None and not info.metrics_enabled:
        body += note("info", "Token rates and time to first token need the engine's metrics: an admin turns them on "
                             "(Monitoring settings, --enable-metrics) and restarts the engine.")
    return body
