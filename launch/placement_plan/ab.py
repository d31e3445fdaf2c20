"""A/B on the same traffic, on the simulated engine: record → plan → relaunch with frequency → replay.

Each run is a real simulated-engine process (`python -m launch.sim`, the command the launch core builds)
with the `stat` recorder (every pass kept: buffer -1), GPU masks and metrics on, unthrottled so that 20K+
tokens take seconds; it still reports simulated time in its latency metrics, so decode tok/s (generated
tokens over summed inter-token latency) and TTFT are the simulated engine's own. The recorder is dumped after
every conversation, so each dump is one conversation: the planner's segments. Measured GPU hit rate: the
dumped activations on the GPU experts of the dumped masks, over the replay's dumps.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from launch.command import Engine, build_command
from launch.health import engine_url, probe_readiness
from launch.model_config import ModelShape
from launch.placement_plan.predict import Hardware, PlacementPlan, plan_placement
from launch.placement_plan.profile_file import save_profile
from launch.placement_plan.recording import Recording, read_recording
from launch.placement_plan.strategies import hit_rate
from launch.preflight import free_port
from launch.presets import with_expert_monitoring
from launch.process_group import spawn, terminate_group
from launch.settings import LaunchSettings

READY_TIMEOUT_S = 60.0
REQUEST_TIMEOUT_S = 120.0
MAX_TOKENS = 4096
FAST_SIM_ENV = {"M3UI_SIM_UNTHROTTLED": "1", "M3UI_SIM_STARTUP_SECONDS": "0.3"}


class AbError(RuntimeError):
    """A run could not be completed (the engine did not start, or a request failed)."""


@dataclass(frozen=True)
class Replay:
    """One prompt set replayed on one engine."""

    hit_rate: float
    decode_tps: float | None  # generated tokens over their summed inter-token latency
    mean_ttft_s: float | None
    tokens: int
    recording: Recording


@dataclass(frozen=True)
class AbResult:
    before_strategy: str  # the settings' own placement strategy
    before: Replay  # the settings' own placement, on the prompt set (also the recording)
    after: Replay  # frequency placement from that recording, on the same prompt set
    plan: PlacementPlan
    profile: Path
    before_other: Replay | None  # the other prompt set, both placements (the gain away from the recording)
    after_other: Replay | None


@dataclass(frozen=True)
class _Latency:
    generated: float
    itl_sum: float
    ttft_sum: float
    ttft_count: float


def _latency(client: httpx.Client) -> _Latency:
    totals: dict[str, float] = {}
    for family in text_string_to_metric_families(client.get("/metrics").text):
        for sample in family.samples:
            totals[sample.name] = totals.get(sample.name, 0.0) + float(sample.value)
    return _Latency(totals.get("sglang:generation_tokens_total", 0.0),
                    totals.get("sglang:inter_token_latency_seconds_sum", 0.0),
                    totals.get("sglang:time_to_first_token_seconds_sum", 0.0),
                    totals.get("sglang:time_to_first_token_seconds_count", 0.0))


@contextmanager
def _engine(settings: LaunchSettings, run_dir: Path) -> Iterator[httpx.Client]:
    """A ready simulated engine for `settings`, stopped on the way out."""
    settings = settings.replace(host="127.0.0.1", port=free_port(), api_key=None, enable_metrics=True)
    command = build_command(settings, Engine(kind="sim"), run_dir)
    command = dataclasses.replace(command, env=(*command.env, *FAST_SIM_ENV.items()))
    run_dir.mkdir(parents=True, exist_ok=True)
    process = spawn(command, run_dir / "engine.log")
    url = engine_url(settings)
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not probe_readiness(url).ready:
            if process.poll() is not None or time.monotonic() > deadline:
                tail = (run_dir / "engine.log").read_text(errors="replace")[-2000:]
                raise AbError(f"the simulated engine did not get ready; its log ends:\n{tail}")
            time.sleep(0.1)
        with httpx.Client(base_url=url, timeout=REQUEST_TIMEOUT_S, trust_env=False) as client:
            yield client
    finally:
        terminate_group(process.pid, 10.0, process)


def _replay(client: httpx.Client, prompts: list[str], recorder_dir: Path, shape: ModelShape) -> Replay:
    """Send each prompt as a new conversation, dumping the recorder after each one."""
    seen = set(recorder_dir.glob("*.pt")) if recorder_dir.is_dir() else set()
    before = _latency(client)
    client.post("/start_expert_distribution_record").raise_for_status()
    for prompt in prompts:
        body = {"messages": [{"role": "user", "content": prompt}], "max_tokens": MAX_TOKENS}
        response = client.post("/v1/chat/completions", json=body)
        if response.status_code != 200:
            raise AbError(f"the engine answered {response.status_code}: {response.text[:300]}")
        client.post("/dump_expert_distribution_record").raise_for_status()
    client.post("/stop_expert_distribution_record").raise_for_status()
    after = _latency(client)
    written = sorted(set(recorder_dir.glob("*.pt")) - seen, key=lambda p: p.stat().st_mtime_ns)
    stats = [p for p in written if p.name.startswith("expert_distribution_recorder_")]
    masks = [p for p in written if p.name.startswith("gpu_expert_distribution_")][:1]
    recording = read_recording([*stats, *masks], shape)
    for path in written:  # the recording keeps the sums; a long replay must not pile up dumps on disk
        path.unlink()
    if recording.recorded_mask is None:
        raise AbError("the engine wrote no GPU expert masks")
    itl = after.itl_sum - before.itl_sum
    generated = after.generated - before.generated
    ttft_count = after.ttft_count - before.ttft_count
    return Replay(
        hit_rate=hit_rate(recording.counts, recording.recorded_mask, shape),
        decode_tps=generated / itl if itl > 0 else None,
        mean_ttft_s=(after.ttft_sum - before.ttft_sum) / ttft_count if ttft_count else None,
        tokens=recording.tokens(shape), recording=recording,
    )


def run_ab(settings: LaunchSettings, shape: ModelShape, prompts: list[str], other: list[str] | None,
           work_dir: Path, hardware: Hardware) -> AbResult:
    """Record and replay on the settings' placement, plan, relaunch with frequency, replay again."""
    gpu_experts = settings.kt_num_gpu_experts
    if gpu_experts is None:
        raise ValueError("the A/B needs --kt-num-gpu-experts in the settings (a preset has it)")
    monitored = with_expert_monitoring(settings, buffer_size=-1)
    before_dir = work_dir / "before"
    with _engine(monitored, before_dir) as client:
        before = _replay(client, prompts, before_dir / "recorder", shape)
        before_other = _replay(client, other, before_dir / "recorder", shape) if other else None
    plan = plan_placement(before.recording, shape, gpu_experts, hardware)
    profile = save_profile(work_dir / "expert_profile.pt", before.recording.counts)
    relaunched = monitored.replace(kt_expert_placement_strategy="frequency", init_expert_location=str(profile))
    after_dir = work_dir / "after"
    with _engine(relaunched, after_dir) as client:
        after = _replay(client, prompts, after_dir / "recorder", shape)
        after_other = _replay(client, other, after_dir / "recorder", shape) if other else None
    return AbResult(settings.kt_expert_placement_strategy, before, after, plan, profile, before_other, after_other)

