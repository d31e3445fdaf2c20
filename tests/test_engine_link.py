"""The engine link's status with a real simulated engine: what chat users and the header are told when the
engine dies."""

import os
import signal

import pytest

from launch.command import Engine
from launch.supervisor import EngineState, Supervisor
from m3ui.engine_link import EngineLink
from m3ui.services import simulated_settings
from tests.test_supervisor import wait_for


@pytest.fixture
def link(tmp_path, monkeypatch):
    monkeypatch.setenv("M3UI_SIM_STARTUP_SECONDS", "0.3")
    supervisor = Supervisor(tmp_path / "m3ui", tick_s=0.05)
    yield EngineLink(supervisor)
    supervisor.close(grace=1)


def test_an_engine_killed_by_sigkill_is_explained_in_one_plain_line_and_the_label_says_failed(link):
    plan = link.launch(simulated_settings(), Engine("sim"))
    assert plan.ok, plan.findings
    assert link.supervisor.wait_ready(30), link.supervisor.snapshot().diagnosis
    assert link.status().failure is None
    os.kill(link.supervisor.snapshot().pid, signal.SIGKILL)
    wait_for(lambda: link.status().state is EngineState.FAILED, 10, "the death to be noticed")
    status = link.status()
    assert status.failure == ("The engine was killed by SIGKILL — probably the out-of-memory killer; "
                              "an admin can restart it from the admin panel.")
    assert "ready" not in status.label and "killed by SIGKILL" in status.label, status.label
