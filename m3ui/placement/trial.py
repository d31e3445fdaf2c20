"""Relaunch with the advised placement, and prove it: the same prompts replayed before and after (issue 13).

One trial at a time for the app, in a background thread: replay the prompt set on the running engine, save
the window's activation counts where `--init-expert-location` reads them (with the launch settings, as a
profile), relaunch with frequency placement at the plan's GPU experts per layer, wait for the engine and the
recorder, replay the same prompts. Each replay measures what a chat user sees (time to first token and decode
tok/s from the streamed answers, m3ui's own client) and the GPU hit rate of exactly the activations it caused
(the monitor's recorder checkpoints around it). The card puts them beside the plan's predictions.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from launch.command import Engine
from launch.placement_plan.predict import Point
from launch.placement_plan.profile_file import default_profile_path, save_profile
from launch.placement_plan.prompts import builtin_mix
from launch.settings import LaunchSettings
from m3ui.client.client import ChatClient
from m3ui.client.events import Finished, StreamError
from m3ui.client.settings import GenerationSettings
from m3ui.engine_link import EngineLink
from m3ui.monitor.service import MonitorService
from m3ui.placement.advice import PlacementAdvice

TrialState = Literal["idle", "before", "relaunching", "after", "done", "failed"]
Relaunch = Callable[[LaunchSettings, Engine], tuple[bool, str]]  # (started, message): the admin's restart
TRIAL_PROMPTS = builtin_mix(answer_length=120)  # 24 conversations over 8 topics, ~300 tokens each
REPLAY_SETTINGS = GenerationSettings(thinking_mode="disabled", temperature=0.0, max_tokens=1024, stall_seconds=300)
READY_TIMEOUT_S = 3600.0  # M3 reads ~465 GB of experts at start


class TrialError(RuntimeError):
    """A step of the trial failed; the message says which, in plain words."""


@dataclass(frozen=True)
class TrialRun:
    """One replay of the prompt set, measured."""

    hit_rate: float | None  # of the activations the replay caused; None: the recorder did not say
    decode_tps: float | None  # tokens after the first over the time after the first, all answers together
    ttft_s: float | None  # mean time to first token
    tokens: int  # completion tokens


@dataclass(frozen=True)
class TrialCard:
    state: TrialState
    detail: str
    strategy_before: str = "uniform"
    gpu_experts: int = 0
    predicted_before: Point | None = None
    predicted_after: Point | None = None
    before: TrialRun | None = None
    after: TrialRun | None = None
    profile: Path | None = None


def replay(client: ChatClient, monitor: MonitorService, prompts: Sequence[str]) -> TrialRun:
    """Send each prompt as a new conversation, one after the other, between two recorder checkpoints."""
    start = monitor.expert_checkpoint() or time.time()
    ttfts: list[float] = []
    tokens, decode_s = 0, 0.0
    for prompt in prompts:
        for event in client.stream([{"role": "user", "content": prompt}], REPLAY_SETTINGS):
            if isinstance(event, StreamError):
                raise TrialError(f"a replayed prompt failed: {event.message}")
            if isinstance(event, Finished):
                stats = event.stats
                if stats.time_to_first_token_s is not None:
                    ttfts.append(stats.time_to_first_token_s)
                if stats.decode_tokens_per_s and stats.completion_tokens and stats.completion_tokens > 1:
                    tokens += stats.completion_tokens - 1
                    decode_s += (stats.completion_tokens - 1) / stats.decode_tokens_per_s
    hit = monitor.answer_gpu_hit_rate(start, time.time())
    return TrialRun(hit, tokens / decode_s if decode_s else None, sum(ttfts) / len(ttfts) if ttfts else None, tokens)


class PlacementTrial:
    """Thread-safe; one per app."""

    def __init__(self, link: EngineLink, monitor: MonitorService, relaunch: Relaunch, data_dir: Path,
                 prompts: Sequence[str] = TRIAL_PROMPTS, ready_timeout_s: float = READY_TIMEOUT_S) -> None:
        self._link, self._monitor, self._relaunch = link, monitor, relaunch
        self._folder = data_dir / "placement"
        self._prompts = tuple(prompts)
        self._ready_timeout_s = ready_timeout_s
        self._lock = threading.Lock()
        self._card = TrialCard("idle", "No placement trial yet.")

    def card(self) -> TrialCard:
        with self._lock:
            return self._card

    def start(self, advice: PlacementAdvice | None) -> str:
        """Start a trial of the advice's frequency placement; returns what happened, in one sentence."""
        settings, engine = self._link.settings, self._link.engine
        with self._lock:
            if self._card.state in ("before", "relaunching", "after"):
                return "A placement trial is already running."
            if advice is None or advice.plan is None:
                return "No placement plan yet: the Monitor needs a few recorder dumps with traffic first."
            if settings is None or engine is None:
                return "Only an engine this app launched can be relaunched (this one is attached)."
            if self._link.endpoint() is None:
                return "The engine is not ready."
            counts = self._monitor.sampler.latest().experts.counts
            if counts is None or not counts.any():
                return "The recorder window holds no activations to place by."
            plan = advice.plan
            self._card = TrialCard(
                "before", f"Replaying {len(self._prompts)} prompts on the current placement…",
                settings.kt_expert_placement_strategy, plan.gpu_experts,
                plan.predicted[settings.kt_expert_placement_strategy], plan.predicted["frequency"])  # type: ignore[index]  # a Strategy: the settings validate it
        threading.Thread(target=self._run, args=(settings, engine, counts), name="placement-trial", daemon=True).start()
        return "Placement trial started: replay, relaunch with frequency placement, replay again."

    def _set(self, **changes: Any) -> None:
        with self._lock:
            self._card = replace(self._card, **changes)

    def _run(self, settings: LaunchSettings, engine: Engine, counts: object) -> None:
        try:
            self._set(before=self._replay())
            profile = save_profile(default_profile_path(self._folder), counts)  # type: ignore[arg-type]  # start() passes the window's counts
            changed = settings.replace(kt_expert_placement_strategy="frequency", init_expert_location=str(profile),
                                       kt_num_gpu_experts=self._card.gpu_experts, kt_gpu_experts_ratio=None)
            self._set(state="relaunching", detail="Relaunching with frequency placement…", profile=profile)
            started, message = self._relaunch(changed, engine)
            if not started:
                raise TrialError(f"the relaunch was refused: {message}")
            self._wait_until_recording()
            self._set(state="after", detail=f"Replaying {len(self._prompts)} prompts on frequency placement…")
            self._set(state="done", detail="Done: the same prompts before and after.", after=self._replay())
        except (TrialError, OSError, ValueError) as error:
            self._set(state="failed", detail=f"Placement trial stopped: {error}")

    def _replay(self) -> TrialRun:
        endpoint = self._link.endpoint()
        if endpoint is None:
            raise TrialError("the engine is not ready")
        return replay(ChatClient(endpoint), self._monitor, self._prompts)

    def _wait_until_recording(self) -> None:
        deadline = time.monotonic() + self._ready_timeout_s
        while time.monotonic() < deadline:
            status = self._link.status()
            if status.failure:
                raise TrialError(f"the relaunched engine failed: {status.failure}")
            # The old engine is gone (a restart stops it first): a recorder that dumps now is the new one's.
            if status.ready and self._monitor.expert_checkpoint() is not None:
                return
            time.sleep(0.2)
        raise TrialError(f"the relaunched engine was not ready within {self._ready_timeout_s:.0f} s")
