"""What the admin panel says about the engine's state (issue 10 #4, issue 9 #9): an outcome made stale by the
engine's own progress is replaced, auto-restart is set from the panel and saved with profiles, and the status
says where automatic restarts stand."""

import dataclasses
import os
import signal
import time

import pytest

from launch.command import Engine
from launch.diagnosis import Diagnosis, FailureCause
from launch.profile import Profile
from launch.restart_policy import AutoRestart, RestartPolicy, RestartPolicyError
from launch.settings import LaunchSettings
from launch.supervisor import EngineState, Supervisor
from m3ui.access import AccessPolicy
from m3ui.admin.console import AdminConsole
from m3ui.admin.restart_form import read_restart_form, restart_form_values
from m3ui.engine_link import EngineLink
from m3ui.services import AppServices, simulated_settings, start_default_engine
from m3ui.ui.admin.events import state_change_outcome
from m3ui.ui.admin.status import render_status
from tests.test_supervisor import wait_for

KILLED = Diagnosis(FailureCause.UNKNOWN, "The engine was killed by SIGKILL", "…", (), exit_code=-9)


@pytest.fixture
def snap(tmp_path):
    """A managed engine's snapshot, to vary."""
    idle = Supervisor(tmp_path / "m3ui").snapshot()
    return dataclasses.replace(idle, mode="managed", state=EngineState.STARTING)


def at(snapshot, state, **changes):
    return dataclasses.replace(snapshot, state=state, **changes)


def test_a_start_that_fails_replaces_starting_follow_the_phases_with_how_it_ended(snap):
    failed = state_change_outcome("starting", at(snap, EngineState.FAILED, diagnosis=KILLED))
    assert failed.level == "error" and failed.message.startswith("The start failed: The engine was killed by SIGKILL")
    assert state_change_outcome("starting", at(snap, EngineState.READY)).message == "The engine is ready."
    too_quick = state_change_outcome("stopped", at(snap, EngineState.FAILED, diagnosis=KILLED))  # between ticks
    assert too_quick.message.startswith("The start failed")
    died = state_change_outcome("ready", at(snap, EngineState.FAILED, diagnosis=KILLED))
    assert died.message.startswith("The engine died: The engine was killed by SIGKILL")


@pytest.mark.parametrize(("previous", "state", "mode"), [
    ("starting", EngineState.STARTING, "managed"), (None, EngineState.FAILED, "managed"),
    ("ready", EngineState.STOPPED, "managed"), ("failed", EngineState.STARTING, "managed"),
    ("starting", EngineState.READY, "attached"),
])
def test_nothing_replaces_the_outcome_when_no_start_ended_and_no_engine_died(snap, previous, state, mode):
    assert state_change_outcome(previous, at(snap, state, mode=mode)) is None


def test_the_status_says_which_attempt_comes_when_and_when_it_gave_up(snap, tmp_path):
    link = EngineLink(Supervisor(tmp_path / "other")).status()
    pending = AutoRestart(2, 3, time.time() + 8)
    html = render_status(at(snap, EngineState.FAILED, auto_restart=pending), link)
    assert 'data-attempt="2"' in html and "auto-restart attempt 2 of 3 in 8 s" in html
    gave_up = render_status(at(snap, EngineState.FAILED, auto_restart=AutoRestart(3, 3, None, gave_up=True)), link)
    assert 'data-gave-up="true"' in gave_up and "gave up after 3 attempt(s)" in gave_up


@pytest.mark.parametrize(("values", "message"), [
    ((True, None, 10, 5), "attempts: enter a number"), ((True, 2.5, 10, 5), "not a whole number"),
    ((True, 3, 0, 5), "window"), ((True, 3, 10, -1), "first delay"), ((True, 0, 10, 5), "max attempts"),
])
def test_the_restart_controls_refuse_bad_values_with_a_plain_message(values, message):
    with pytest.raises(RestartPolicyError, match=message):
        read_restart_form(*values)


def test_the_restart_controls_round_trip():
    policy = RestartPolicy(enabled=True, max_attempts=4, window_s=1800, first_delay_s=10)
    assert read_restart_form(*restart_form_values(policy)) == policy


def test_the_panel_sets_the_live_policy_and_profiles_keep_theirs(tmp_path):
    services = AppServices.create(tmp_path / "data", AccessPolicy("127.0.0.1", "pw"))
    try:
        console = AdminConsole(services)
        policy = RestartPolicy(enabled=True, max_attempts=5)
        assert console.set_restart_policy(policy).ok and services.supervisor.restart_policy == policy
        assert "up to 5 attempt(s)" in console.set_restart_policy(policy).message
        assert console.save_profile("box", LaunchSettings(model_path="/m"), Engine("sim"), True, policy).ok
        assert console.load_profile("box").restart == policy
        assert console.set_startup_profile(None).ok  # re-saving a profile keeps its policy
        assert services.profiles.load("box").restart == policy and not services.profiles.load("box").start_with_app
    finally:
        services.close()


def test_a_profile_that_starts_with_the_app_brings_its_auto_restart_policy(tmp_path, monkeypatch):
    monkeypatch.setenv("M3UI_SIM_STARTUP_SECONDS", "0.3")
    policy = RestartPolicy(enabled=True, max_attempts=7)
    services = AppServices.create(tmp_path / "data", AccessPolicy("127.0.0.1", None))
    try:
        services.profiles.save(Profile("unattended", simulated_settings(), Engine("sim"), True, policy))
        assert start_default_engine(services).ok
        assert services.supervisor.restart_policy == policy
    finally:
        services.close()


def test_stop_calls_off_a_pending_automatic_restart(tmp_path, monkeypatch):
    monkeypatch.setenv("M3UI_SIM_STARTUP_SECONDS", "0.3")
    services = AppServices.create(tmp_path / "data", AccessPolicy("127.0.0.1", None))
    try:
        console = AdminConsole(services)
        console.set_restart_policy(RestartPolicy(enabled=True, first_delay_s=30))
        assert console.start(simulated_settings(), Engine("sim")).ok and services.supervisor.wait_ready(30)
        os.kill(services.supervisor.snapshot().pid, signal.SIGKILL)
        wait_for(lambda: services.supervisor.snapshot().auto_restart is not None, 10, "the restart to be planned")
        outcome = console.stop()
        assert outcome.message == "The automatic restart was called off: the engine stays down."
        assert services.supervisor.snapshot().auto_restart is None
        assert console.stop().message == "Nothing to stop: the engine is failed."
    finally:
        services.close()
