"""The app's one monitor: a Sampler whose target follows the engine link.

The supervisor starts, stops, fails and re-attaches engines on its own threads, so a small "follower"
thread looks at the link twice a second and, when what it watches changed (another URL, process, run
folder or settings), hands the sampler a new MonitorTarget. Everything a browser session shows comes
from the sampler's cached snapshot; the per-answer GPU hit rate for chat messages is here too.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path

from launch.model_config import ModelConfigError, ModelShape, load_model_shape
from launch.settings import LaunchSettings
from launch.supervisor import EngineState
from m3ui.engine_link import EngineLink
from m3ui.monitor.sampler import Sampler, SamplerConfig
from m3ui.monitor.target import MonitorTarget, target_for_launch

log = logging.getLogger(__name__)

FOLLOW_EVERY_S = 0.5
_WATCHED_STATES = (EngineState.STARTING, EngineState.READY)  # a loading engine already uses CPU, RAM and VRAM


@dataclass(frozen=True)
class WatchedEngine:
    """What the monitor must know of the engine now; when it changes, the sampler gets a new target."""

    url: str | None = None  # None: no engine running or attached
    api_key: str | None = field(default=None, repr=False)
    pid: int | None = None  # the engine's root process, when this app started (or re-attached) it
    recorder_dir: Path | None = None  # None: not visible from here (an attached engine)
    settings: LaunchSettings | None = None  # None: attached, settings unknown
    simulated: bool = False


def watched_engine(link: EngineLink) -> WatchedEngine:
    """The engine the sampler watches: none behind a fleet's router, whose workers the fleet monitor reads each
    (the router serves no /v1/loads: asking it once a second put a 404 in its log each time)."""
    snapshot = link.supervisor.snapshot(log_lines=0)
    if snapshot.state not in _WATCHED_STATES or not snapshot.url or link.fronts_a_fleet:
        return WatchedEngine()
    engine = link.engine
    return WatchedEngine(url=snapshot.url, api_key=link.api_key, pid=snapshot.pid, recorder_dir=link.recorder_dir(),
                         settings=link.settings, simulated=engine is not None and engine.kind == "sim")


def _model_shape(settings: LaunchSettings, simulated: bool) -> ModelShape | None:
    """For the GPU placement the settings imply (used when the engine does not dump its GPU masks)."""
    try:
        return load_model_shape(settings.model_path)
    except ModelConfigError:
        # the simulated engine falls back to the bundled M3 config, the real one refuses to start
        return load_model_shape(None) if simulated else None


def target_for(watched: WatchedEngine) -> MonitorTarget:
    if watched.url is None:
        return MonitorTarget()
    if watched.settings is None:
        return MonitorTarget(engine_url=watched.url, api_key=watched.api_key, engine_pid=watched.pid)
    shape = _model_shape(watched.settings, watched.simulated)
    return target_for_launch(watched.settings, watched.pid, watched.recorder_dir, shape)


def format_hit_rate(rate: float) -> str:
    """How a per-answer figure reads next to a chat message's other stats."""
    return f"GPU hit {rate:.0%}"


class MonitorService:
    """Start once with the app; `stop()` at exit. Thread-safe."""

    def __init__(self, link: EngineLink, config: SamplerConfig | None = None,
                 follow_every_s: float = FOLLOW_EVERY_S) -> None:
        self.link = link
        self.sampler = Sampler(config=config)
        self._follow_every_s = follow_every_s
        self._watched: WatchedEngine | None = None
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stopping.clear()
        self.follow()  # the first target before the first sample
        self.sampler.start()
        self._thread = threading.Thread(target=self._follow_loop, name="monitor-follow", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(5.0)
            self._thread = None
        self.sampler.stop()

    def follow(self) -> bool:
        """Point the sampler at the engine the link has now; True when the target changed."""
        watched = watched_engine(self.link)
        if watched == self._watched:
            return False
        self._watched = watched
        self.sampler.set_target(target_for(watched))
        log.info("monitor now watches %s", watched.url or "no engine")
        return True

    def _follow_loop(self) -> None:
        while not self._stopping.wait(self._follow_every_s):
            try:
                self.follow()
            except Exception:  # the panels must keep their last target rather than stop following for good
                log.exception("monitor could not follow the engine link")

    # ------------------------------------------------------------ per answer

    def expert_checkpoint(self) -> float | None:
        """Dump the expert recorder now; take one just before sending a request and pass it as `t0` below
        for an exact per-answer figure (None: no recorder running)."""
        return self.sampler.expert_checkpoint()

    def answer_gpu_hit_rate(self, t0: float, t1: float) -> float | None:
        """Share of the expert activations the engine routed between `t0` and `t1` (an answer's start and
        end, wall-clock seconds) that GPU-resident experts served; None when unknown.

        Waits for a recorder dump begun after `t1`, so the figure reaches `t1`; answers that end together share
        that dump (ExpertSource.checkpoint). It covers everything the engine routed meanwhile (other users'
        requests too), and with a plain start time rather than a checkpoint it also covers what was routed
        between the dump before `t0` and `t0`.
        """
        boundary = self.sampler.expert_checkpoint(after=t1) or self.sampler.latest_experts().last_dump
        if boundary is None:
            return None
        hit_rate = self.sampler.expert_hit_rate_between(t0, max(t1, boundary))
        return hit_rate.rate if hit_rate is not None else None

    def answer_hit_rate(self, t0: float, t1: float) -> str | None:
        """`answer_gpu_hit_rate` as chat stats show it, e.g. "GPU hit 31%"."""
        rate = self.answer_gpu_hit_rate(t0, t1)
        return format_hit_rate(rate) if rate is not None else None
