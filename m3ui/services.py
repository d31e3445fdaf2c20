"""The app's long-lived objects, made once at start and shared by every view and browser session."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from launch.command import Engine
from launch.last_good import LastGood
from launch.model_config import BUNDLED_M3_CONFIG
from launch.preflight import LaunchPlan, free_port
from launch.presets import preset, with_expert_monitoring
from launch.private_files import tighten
from launch.profile import ProfileStore
from launch.recovery import RecoveryAction, recover
from launch.run_state import read_run_state
from launch.settings import LaunchSettings
from launch.supervisor import EngineState, Supervisor
from m3ui.access import AccessPolicy
from m3ui.accounts.meter import AnswerMeter
from m3ui.accounts.usage import UsageLedger
from m3ui.engine_link import EngineLink
from m3ui.live.early_ask import StartEarly
from m3ui.live.feed import LiveFeeds
from m3ui.live.frame_diff import LiveFrame
from m3ui.live.holder import LiveHolder
from m3ui.monitor.fleet import FleetMonitor
from m3ui.monitor.service import MonitorService
from m3ui.web.login_throttle import LoginThrottle
from m3ui.web.password_change import EndSessions

if TYPE_CHECKING:
    from launch.fleet.supervisor import FleetSupervisor

log = logging.getLogger("m3ui")


@dataclass
class AppServices:
    data_dir: Path
    policy: AccessPolicy
    supervisor: Supervisor
    link: EngineLink
    profiles: ProfileStore
    monitor: MonitorService  # the one background sampler; its target follows `link`
    last_good: LastGood
    fleet: FleetSupervisor | None = None  # set when the app runs a fleet (`app.py --fleet`)
    fleet_monitor: FleetMonitor = field(init=False)  # each worker behind a router, for the Monitor tab
    live_feeds: LiveFeeds[LiveFrame] = field(default_factory=LiveFeeds)  # the pages' live channels (m3ui.live)
    send_early: StartEarly = field(default=lambda page, form, user: False)  # the Chat tab's (m3ui.live.early_ask)
    login_throttle: LoginThrottle = field(default_factory=LoginThrottle)  # the logins' and the password change's
    end_sessions: EndSessions = field(default=lambda user, cookies: 0)  # set once the apps are mounted
    # (client address, signed-in user, cookies) -> who uses a live ticket; set once the chat app is mounted
    live_holder: Callable[[str, str | None, Mapping[str, str]], LiveHolder] = field(
        default=lambda client, user, cookies: LiveHolder.of(client, user, None))
    gateway_key: str | None = field(default=None, repr=False)  # --gateway-key-file's key (m3ui.gateway)
    gateway_limits: tuple[int, int] | None = None  # --gateway-key-limits: per key, at once and per minute
    gateway_cors: str | None = None  # --gateway-cors: the one foreign origin whose pages may call /v1

    @classmethod
    def create(cls, data_dir: Path, policy: AccessPolicy) -> AppServices:
        tighten(data_dir)  # profiles, last-good settings, the state file and engine logs hold the engine's API key
        supervisor = Supervisor(data_dir)  # keeps runs/<time>/ and the running engine's state file there
        last_good = LastGood(data_dir)
        supervisor.on_ready, supervisor.restart_source = last_good.record, last_good.launch
        link = EngineLink(supervisor)
        # An engine a killed app left running is re-attached (never orphaned, never started twice).
        result = recover(data_dir, adopt_into=supervisor)
        if result.action is RecoveryAction.ATTACHED:
            state = read_run_state(data_dir)
            if state is not None:
                link.adopted(state.settings, state.engine)
        if result.action is not RecoveryAction.NOTHING:
            log.warning("recovery: %s", result.message)
        monitor = MonitorService(link)
        monitor.start()
        services = cls(data_dir, policy, supervisor, link, ProfileStore(data_dir / "profiles"), monitor, last_good)
        services.fleet_monitor = FleetMonitor(link, lambda: services.fleet)
        services.fleet_monitor.start()
        return services

    @property
    def usage(self) -> UsageLedger | None:
        """Usage per person (None when the app runs without accounts)."""
        return UsageLedger(self.policy.accounts) if self.policy.accounts is not None else None

    @property
    def meter(self) -> AnswerMeter | None:
        """The chat's quota check and usage record (None when the app runs without accounts)."""
        usage = self.usage
        return AnswerMeter(usage) if usage is not None else None

    def answer_gpu_hit_rate(self, t0: float, t1: float) -> float | None:
        """The chat's per-answer figure (see MonitorService.answer_gpu_hit_rate)."""
        return self.monitor.answer_gpu_hit_rate(t0, t1)

    def close(self) -> None:
        self.fleet_monitor.stop()
        self.monitor.stop()
        self.supervisor.close()


def simulated_settings(port: int | None = None) -> LaunchSettings:
    """The single-GPU reference preset on the bundled M3-shaped config, with expert monitoring on,
    listening on loopback only."""
    bundled = str(BUNDLED_M3_CONFIG.parent)
    return with_expert_monitoring(preset("single-gpu", bundled)).replace(
        host="127.0.0.1", port=port or free_port())


def start_default_engine(services: AppServices) -> LaunchPlan | None:
    """A profile marked to start with the app, else the simulated engine (nothing when one was
    re-attached at start)."""
    if services.supervisor.state is not EngineState.STOPPED:
        return None
    profile = services.profiles.startup_profile()
    if profile is not None:
        log.info("starting profile %r (%s engine)", profile.name, profile.engine.kind)
        services.supervisor.set_restart_policy(profile.restart)
        return services.link.launch(profile.settings, profile.engine)
    return services.link.launch(simulated_settings(), Engine("sim"))
