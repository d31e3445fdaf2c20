"""What the Monitor's sampler watches: the engine the link points at, but not a fleet's router, which serves no
one engine's figures (the fleet monitor reads each worker instead)."""

from __future__ import annotations

from launch.supervisor import Supervisor
from m3ui.engine_link import FLEET_ROUTER, EngineLink
from m3ui.monitor.service import WatchedEngine, watched_engine
from tests.sim_process import free_port, running_sim, sim_settings
from tests.test_supervisor import wait_for


def test_an_attached_engine_is_watched_and_a_fleets_router_is_not(tmp_path):
    with running_sim(sim_settings(free_port())) as sim:
        plain, router = EngineLink(Supervisor(tmp_path / "plain")), EngineLink(Supervisor(tmp_path / "router"))
        try:
            plain.attach(sim.url, None)
            router.attach(sim.url, None, attached_as=FLEET_ROUTER)
            for link in (plain, router):
                wait_for(lambda link=link: link.status().ready, 20, "the attached engine to be ready")
            assert watched_engine(plain).url == sim.url
            assert router.fronts_a_fleet and not plain.fronts_a_fleet
            assert watched_engine(router) == WatchedEngine()
        finally:
            plain.supervisor.close(grace=1)
            router.supervisor.close(grace=1)
