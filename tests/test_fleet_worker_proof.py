"""A fleet worker gets prompts only once it proved to be an engine serving the fleet's model: a local web service
that answers /health 200 but is not an engine is refused (it was attached and got half of the prompts); a worker
whose answers stop parsing is taken out of the router and shown untrusted, and put back once it proves itself."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from launch.command import Engine
from launch.fleet.addition import check_addition
from launch.fleet.router_settings import RouterSettings
from launch.fleet.spec import AttachedWorker, Fleet, LaunchedWorker
from launch.fleet.supervisor import FleetSupervisor
from launch.fleet.worker_proof import prove_worker
from tests.fault_proxy import FaultProxy
from tests.fleet_checks import healthy_workers, until
from tests.fleet_process import free_block
from tests.sim_process import FAST_ENV, free_port, running_sim, sim_settings

NOT_AN_ENGINE = b"<html><body><h1>Welcome to the build dashboard</h1></body></html>"


@pytest.fixture
def web_service() -> Iterator[FaultProxy]:
    """A local web service, not an engine: /health 200, a web page for every other path."""
    with FaultProxy(f"http://127.0.0.1:{free_port()}") as service:
        service.answers.update({"/health": (200, b""), "*": (200, NOT_AN_ENGINE)})
        yield service


def test_an_engine_proves_itself_and_a_web_service_does_not(web_service: FaultProxy) -> None:
    with running_sim(sim_settings(free_port(), served_model_name="m3")) as sim:
        proof = prove_worker(sim.url)
        assert proof.proven and proof.model == "m3"
        assert proof.for_model("other").problem == "it serves 'm3', not the fleet's 'other'"
    refused = prove_worker(web_service.url)
    assert refused.conclusive and not refused.proven
    assert f"{web_service.url} is not an engine: /v1/models lists no model" == refused.problem
    web_service.answers["/v1/models"] = (200, b'{"object": "list", "data": [{"id": "m3"}]}')
    refused = prove_worker(web_service.url)
    assert "/server_info answered 200 with '<html><body><h1>Welcome to the build dashboard" in (refused.problem or "")
    silent = prove_worker(f"http://127.0.0.1:{free_port()}")
    assert not silent.conclusive and "nothing answers at" in (silent.problem or "")


pytest.importorskip("sglang_router")


def test_a_fleet_refuses_a_web_service_and_takes_out_a_worker_whose_answers_stop_parsing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, web_service: FaultProxy) -> None:
    for key, value in FAST_ENV.items():
        monkeypatch.setenv(key, value)
    first = LaunchedWorker(sim_settings(free_port(), served_model_name="m3"))
    fleet = FleetSupervisor(Fleet(RouterSettings(port=free_block(2)), (first,), Engine("sim")), tmp_path)
    fleet.start()
    router = fleet.fleet.router.url
    try:
        assert fleet.wait_ready(120), fleet.snapshot()
        assert fleet.model == "m3"
        [finding] = check_addition(fleet.fleet, AttachedWorker(web_service.url), fleet.model)
        assert finding.is_error and "is not an engine: /v1/models lists no model" in finding.message
        with pytest.raises(ValueError, match="is not an engine"):
            fleet.add(AttachedWorker(web_service.url))
        with (running_sim(sim_settings(free_port(), served_model_name="another-model")) as stranger,
              pytest.raises(ValueError, match="it serves 'another-model', not the fleet's 'm3'")):
            fleet.add(AttachedWorker(stranger.url))
        assert fleet.fleet.worker_urls == (first.url,) and healthy_workers(router) == {first.url}

        with running_sim(sim_settings(free_port(), served_model_name="m3")) as sim, FaultProxy(sim.url) as outside:
            fleet.add(AttachedWorker(outside.url))
            until(lambda: healthy_workers(router) == {first.url, outside.url})
            outside.answers["/server_info"] = (200, NOT_AN_ENGINE)  # it goes on answering /health 200
            until(lambda: healthy_workers(router) == {first.url}, 30, "the worker taken out of the router")
            status = next(w for w in fleet.snapshot().workers if w.url == outside.url)
            assert not status.healthy and status.outages == 1
            assert "is not an engine: /server_info answered 200" in (status.untrusted or "")
            outside.answers.clear()
            until(lambda: healthy_workers(router) == {first.url, outside.url}, 30, "the worker back in the router")
            assert next(w for w in fleet.snapshot().workers if w.url == outside.url).untrusted is None
    finally:
        fleet.stop()
