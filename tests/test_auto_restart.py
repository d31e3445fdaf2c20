"""Issue 9 #9: an opt-in auto-restart policy, tested on the real simulated engine killed with SIGKILL: back-off,
a limit of attempts in a window, relaunch with the last-good settings, and what chat users and admins are told."""

import json
import os
import signal
import time

import pytest

from launch.command import Engine
from launch.last_good import LastGood
from launch.model_config import load_model_shape
from launch.profile import Profile, ProfileError, profile_from_json, profile_to_json
from launch.restart_policy import RestartPolicy, RestartPolicyError, policy_from_mapping
from launch.settings import LaunchSettings
from launch.supervisor import EngineState, Supervisor
from m3ui.engine_link import EngineLink
from m3ui.services import simulated_settings
from tests.test_supervisor import wait_for

FAST = RestartPolicy(enabled=True, max_attempts=2, window_s=60, first_delay_s=0.5, max_delay_s=5)


def test_the_back_off_doubles_up_to_its_ceiling():
    policy = RestartPolicy(enabled=True, first_delay_s=5, max_delay_s=30)
    assert [policy.delay(n) for n in (1, 2, 3, 4, 5)] == [5, 10, 20, 30, 30]


@pytest.mark.parametrize("bad", [{"max_attempts": 0}, {"max_attempts": 2.5}, {"window_s": float("nan")},
                                 {"first_delay_s": -1}, {"enabled": "yes"}, {"max_attemps": 3}, [1]])
def test_a_bad_policy_is_refused_with_a_plain_message(bad):
    with pytest.raises(RestartPolicyError, match="auto.restart"):
        policy_from_mapping(bad)


def test_a_profile_keeps_its_policy_and_an_older_profile_has_it_off():
    profile = Profile("p", LaunchSettings(model_path="/m"), restart=FAST)
    assert profile_from_json(profile_to_json(profile)) == profile
    doc = json.loads(profile_to_json(profile))
    del doc["auto_restart"]
    assert profile_from_json(json.dumps(doc)).restart == RestartPolicy()
    doc["auto_restart"] = {"enabled": True, "max_attempts": -3}
    with pytest.raises(ProfileError, match="max attempts"):
        profile_from_json(json.dumps(doc))


@pytest.fixture
def deployment(tmp_path, monkeypatch):
    """A supervisor wired as the app wires it: the last good launch kept on disk and used to restart."""
    monkeypatch.setenv("M3UI_SIM_STARTUP_SECONDS", "0.3")
    supervisor = Supervisor(tmp_path / "m3ui", tick_s=0.05)
    last_good = LastGood(tmp_path / "m3ui")
    supervisor.on_ready, supervisor.restart_source = last_good.record, last_good.launch
    link = EngineLink(supervisor)
    yield supervisor, link, last_good
    supervisor.close(grace=1)


def kill_engine(supervisor: Supervisor) -> int:
    pid = supervisor.snapshot().pid
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: supervisor.state is EngineState.FAILED, 10, "the death to be noticed")
    return pid


def stays_down(supervisor: Supervisor) -> None:
    time.sleep(2.0)  # longer than any delay the policy in force would wait
    assert supervisor.state is EngineState.FAILED


def test_a_killed_engine_is_restarted_with_back_off_until_the_limit_then_left_for_an_admin(deployment):
    supervisor, link, _ = deployment
    supervisor.set_restart_policy(FAST)
    link.launch(simulated_settings(), Engine("sim"))
    assert supervisor.wait_ready(30)

    killed_at = time.time()
    first = kill_engine(supervisor)
    noticed_by = time.time()  # the death was noticed (and the restart planned) before this, however busy the host
    auto = supervisor.snapshot().auto_restart
    assert killed_at + FAST.first_delay_s <= auto.due_at <= noticed_by + FAST.first_delay_s  # not backed off yet
    assert (auto.attempt, auto.max_attempts, auto.gave_up) == (1, 2, False) and auto.due_at is not None
    assert "restarts by itself in" in link.status().failure and "(attempt 1 of 2)" in link.status().failure
    assert "killed by SIGKILL" in link.status().failure
    assert "failed — The engine was killed by SIGKILL; restarting in" in link.status().label
    wait_for(lambda: supervisor.state is EngineState.READY, 30, "the first automatic restart")
    assert supervisor.snapshot().pid != first
    assert supervisor.snapshot().auto_restart.describe(0) == "auto-restarted (attempt 1 of 2)"

    killed_at = time.time()
    kill_engine(supervisor)
    auto = supervisor.snapshot().auto_restart
    assert auto.attempt == 2 and auto.due_at >= killed_at + 2 * FAST.first_delay_s  # backed off
    wait_for(lambda: supervisor.state is EngineState.READY, 30, "the second automatic restart")

    kill_engine(supervisor)  # a third death inside the window: no more attempts
    auto = supervisor.snapshot().auto_restart
    assert auto.gave_up and auto.due_at is None
    assert link.status().failure.endswith("an admin can restart it from the admin panel.")
    assert "restarting" not in link.status().label
    stays_down(supervisor)


def test_the_restart_launches_the_last_good_settings_not_the_ones_that_failed(deployment):
    supervisor, link, last_good = deployment
    good = simulated_settings()
    link.launch(good, Engine("sim"))
    assert supervisor.wait_ready(30)
    assert last_good.load().settings == good  # kept the moment it got ready, no admin page needed
    supervisor.stop(grace=2)

    supervisor.set_restart_policy(FAST)
    too_many = good.replace(kt_num_gpu_experts=100)  # the simulated GPU cannot hold them: it fails at load
    supervisor.start(too_many, Engine("sim"), moe_layers=load_model_shape(None).num_moe_layers)
    wait_for(lambda: supervisor.state is EngineState.FAILED, 30, "the bad launch to fail")
    wait_for(lambda: supervisor.state is EngineState.READY, 30, "the restart with the last good settings")
    assert link.settings == good and link.status().ready


def test_stopping_calls_off_a_pending_restart(deployment):
    supervisor, link, _ = deployment
    supervisor.set_restart_policy(RestartPolicy(enabled=True, first_delay_s=1))
    link.launch(simulated_settings(), Engine("sim"))
    assert supervisor.wait_ready(30)
    kill_engine(supervisor)
    assert supervisor.snapshot().auto_restart.due_at is not None
    supervisor.stop()
    assert supervisor.snapshot().auto_restart is None
    stays_down(supervisor)


def test_without_the_policy_a_dead_engine_stays_down(deployment):
    supervisor, link, _ = deployment
    link.launch(simulated_settings(), Engine("sim"))
    assert supervisor.wait_ready(30)
    kill_engine(supervisor)
    assert supervisor.snapshot().auto_restart is None
    stays_down(supervisor)
