"""The admin's Fleet desk (m3ui/admin/fleet.py) on one real fleet for the module: the real sglang-router in front
of a simulated worker launched here. It shows the router and each worker as they are; bad additions are refused
with their reasons before anything starts; an attached and a launched worker join the router and are removed
again (the launched one stopped, the attached one left running); a worker that dies is counted as restarted."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import gradio as gr
import httpx
import psutil
import pytest

from launch.command import Engine
from launch.fleet.addition import check_addition, launched_worker
from launch.fleet.fleet_file import fleet_from_mapping
from launch.fleet.supervisor import FleetState, FleetSupervisor
from launch.supervisor import EngineState
from m3ui.access import AccessPolicy
from m3ui.admin.console import AdminConsole
from m3ui.admin.fleet import NO_FLEET, ROUTER_CHOICE, FleetDesk, WorkerRow
from m3ui.services import AppServices, simulated_settings
from m3ui.ui.admin.view import build_admin_app
from tests.fleet_checks import healthy_workers, until
from tests.fleet_process import free_block, serving_fleet
from tests.sim_process import free_port, running_sim, sim_settings

pytest.importorskip("sglang_router")
# A launch that starts: "warning" where the sim's CPU settings exceed this machine's CPUs (it starts anyway)
LAUNCHED = ("ok", "warning")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FleetSupervisor]:
    # As `app.py --fleet` reads it: the simulated engine on the bundled M3-shaped config (passes preflight).
    spec = fleet_from_mapping({"engine": "sim", "router": {"port": free_block(2)},
                               "base": {"preset": "single-gpu", "set": {"host": "127.0.0.1"}},
                               "workers": [{"port": free_port()}]})
    with serving_fleet(spec, tmp_path_factory.mktemp("fleet")) as supervisor:
        yield supervisor


@pytest.fixture
def desk(fleet: FleetSupervisor) -> FleetDesk:
    return FleetDesk(fleet)


def router_urls(fleet: FleetSupervisor) -> set[str]:
    return healthy_workers(fleet.fleet.router.url)


def worker_dirs(fleet: FleetSupervisor) -> list[Path]:
    run_dir = fleet.snapshot().run_dir
    assert run_dir is not None
    return sorted(run_dir.glob("worker-*"))


def test_the_desk_shows_the_router_and_each_worker(fleet: FleetSupervisor, desk: FleetDesk) -> None:
    view = desk.view()
    assert view is not None
    assert (view.router.url, view.router.policy, view.router.state) == (fleet.fleet.router.url, "cache_aware",
                                                                        FleetState.READY)
    assert view.router.healthy is True and view.router.pid == fleet.snapshot().router_pid
    (row,) = view.workers
    first = fleet.fleet.worker_urls[0]
    assert (row.number, row.status.url, row.status.launched, row.status.state) == (1, first, True, "ready")
    assert row.status.in_router and row.status.healthy and row.status.restarts == 0
    assert row.load is not None and row.load_note == "", row.load_note  # read from the worker itself
    assert desk.choices() == [ROUTER_CHOICE, first]
    assert "ready to roll" in desk.log(first)
    assert "/v1/loads" not in desk.log(first)  # the desk's own reads stay out of the log it shows
    router_log = desk.log(ROUTER_CHOICE)
    assert "Starting router" in router_log and "\x1b" not in router_log  # its colour codes stripped
    assert "uri=/health " not in router_log and "uri=/workers " not in router_log  # nor the polls shown
    assert "was not launched here" in desk.log("http://127.0.0.1:9")


def test_bad_additions_are_refused_before_anything_starts(fleet: FleetSupervisor, desk: FleetDesk) -> None:
    first = fleet.fleet.worker_urls[0]
    before = (fleet.fleet.workers, worker_dirs(fleet), router_urls(fleet))
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        refusals = {
            "gpu-b:30000": desk.attach("gpu-b:30000"),
            "duplicate": desk.attach(first + "/"),
            "nothing there": desk.attach(f"http://127.0.0.1:{free_port()}"),
            "empty": desk.attach("  "),
            "port text": desk.launch("30a", "", ""),
            "port in use": desk.launch(str(taken), "", ""),
            "router's port": desk.launch(str(fleet.fleet.router.port), "", ""),
            "unknown setting": desk.launch("", "", "no_such_field=1"),
            "bad gpus": desk.launch("", "zero", ""),
            "no worker picked": desk.remove(ROUTER_CHOICE),
            "not a worker": desk.remove("http://127.0.0.1:9"),
        }
    said = {what: " ".join([o.message, *(f.message for f in o.findings)]) for what, o in refusals.items()}
    assert all(o.level == "error" for o in refusals.values()), said
    assert "is not an http(s)://HOST:PORT address" in said["gpu-b:30000"]
    assert f"{first} is also worker 1" in said["duplicate"]
    assert "nothing answers at" in said["nothing there"]
    assert "give the engine's URL" in said["empty"]
    assert "port '30a' is not a number" in said["port text"]
    assert f"port {taken} on 127.0.0.1 is already in use" in said["port in use"]
    assert f"both use port {fleet.fleet.router.port}" in said["router's port"]
    assert "no_such_field" in said["unknown setting"]
    assert "list GPU numbers" in said["bad gpus"]
    assert "pick a worker first" in said["no worker picked"]
    assert "is not a worker of this fleet" in said["not a worker"]
    assert (fleet.fleet.workers, worker_dirs(fleet), router_urls(fleet)) == before  # nothing started or listed


def test_workers_attached_and_launched_join_the_router_and_leave_it(fleet: FleetSupervisor, desk: FleetDesk) -> None:
    first = fleet.fleet.worker_urls[0]
    with running_sim(sim_settings(free_port())) as outside:
        done = desk.attach(outside.url)
        assert done.level == "ok", done
        until(lambda: router_urls(fleet) == {first, outside.url})
        launched = desk.launch("", "", "")
        assert launched.level in LAUNCHED, launched
        (added,) = set(fleet.fleet.worker_urls) - {first, outside.url}
        until(lambda: router_urls(fleet) == {first, outside.url, added})
        until(lambda: fleet.state is FleetState.READY)
        view = desk.view()
        assert view is not None
        rows = {row.status.url: row for row in view.workers}
        assert [(rows[u].number, rows[u].status.launched) for u in (first, outside.url, added)] == [
            (1, True), (2, False), (3, True)]
        assert all(row.status.healthy and row.load is not None for row in rows.values())
        assert desk.choices() == [ROUTER_CHOICE, first, outside.url, added]
        pid = fleet.worker_supervisor(1).snapshot().pid
        assert pid is not None

        gone = desk.remove(added)
        assert gone.level == "ok" and "stopped it" in gone.message, gone
        until(lambda: router_urls(fleet) == {first, outside.url})
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        left = desk.remove(outside.url)
        assert left.level == "ok" and "keeps running" in left.message, left
        until(lambda: router_urls(fleet) == {first})
        assert httpx.get(f"{outside.url}/health", timeout=5).status_code == 200
        assert desk.remove(first).level == "error"  # the last worker stays: stopping the fleet is not removing
    assert fleet.fleet.worker_urls == (first,)


def test_a_worker_that_dies_is_shown_restarted_and_counts_afresh_once_added_again(fleet: FleetSupervisor,
                                                                                desk: FleetDesk) -> None:
    first, port = fleet.fleet.worker_urls[0], free_port()
    url = f"http://127.0.0.1:{port}"

    def row() -> WorkerRow:
        view = desk.view()
        assert view is not None
        return next(r for r in view.workers if r.status.url == url)

    assert desk.launch(str(port), "", "").level in LAUNCHED
    until(lambda: router_urls(fleet) == {first, url})
    pid = fleet.worker_supervisor(1).snapshot().pid
    assert pid is not None and row().status.restarts == 0
    psutil.Process(pid).kill()
    until(lambda: row().status.restarts == 1 and row().status.healthy and row().status.state == "ready")
    assert router_urls(fleet) == {first, url}
    assert desk.remove(url).level == "ok"
    assert desk.launch(str(port), "", "").level in LAUNCHED  # the same URL again: a new worker
    assert row().status.restarts == 0
    assert desk.remove(url).level == "ok"
    until(lambda: router_urls(fleet) == {first})


def test_without_a_fleet_every_action_says_how_to_run_one() -> None:
    desk = FleetDesk(None)
    assert desk.view() is None
    assert desk.choices() == [ROUTER_CHOICE]
    for outcome in (desk.launch("", "", ""), desk.attach("http://127.0.0.1:1"), desk.remove("http://x:1")):
        assert (outcome.level, outcome.message) == ("error", NO_FLEET)


def fleet_handlers(demo: gr.Blocks) -> dict[str, object]:
    return {fn.api_name: fn for fn in demo.fns.values() if fn.fn is not None and fn.api_name.startswith("admin_fleet")}


def test_the_admin_app_shows_the_fleet_to_the_admin_only(fleet: FleetSupervisor, tmp_path: Path) -> None:
    services = AppServices.create(tmp_path / "data", AccessPolicy("127.0.0.1", "secret"))
    try:
        services.fleet = fleet
        handlers = fleet_handlers(build_admin_app(services))
        assert set(handlers) == {"admin_fleet_refresh", "admin_fleet_log", "admin_fleet_launch", "admin_fleet_attach",
                                 "admin_fleet_remove"}
        for fn in handlers.values():
            for user in (None, "bob"):
                with pytest.raises(gr.Error, match="admin"):
                    fn.fn(gr.Request(username=user), *[None] * len(fn.inputs))  # type: ignore[attr-defined]
        refresh = handlers["admin_fleet_refresh"].fn  # type: ignore[attr-defined]
        router, workers, *_ = refresh(gr.Request(username="admin"), {}, ROUTER_CHOICE)
        assert fleet.fleet.router.url in router and 'data-router-healthy="true"' in router
        assert f'data-url="{fleet.fleet.worker_urls[0]}" data-where="launched"' in workers
    finally:
        services.close()
    assert fleet.fleet.worker_urls == (fleet.fleet.worker_urls[0],)  # the refused calls changed nothing


def test_the_single_engine_controls_refuse_on_a_fleet(fleet: FleetSupervisor, tmp_path: Path) -> None:
    """Start/Stop/Restart/Attach (and what calls them: apply a fix, roll back, the placement relaunch) act on the
    app's one engine link, which a fleet points at its router: they would cut the chat off from every worker."""
    services = AppServices.create(tmp_path / "data", AccessPolicy("127.0.0.1", "secret"))
    try:
        services.fleet = fleet
        console = AdminConsole(services)
        settings = simulated_settings()
        for outcome in (console.start(settings, Engine("sim")), console.restart(settings, Engine("sim")),
                        console.stop(), console.attach("http://127.0.0.1:9", "")):
            assert outcome.level == "error" and "Fleet tab" in outcome.message, outcome
            assert fleet.fleet.router.url in outcome.message
        assert services.supervisor.state is EngineState.STOPPED  # nothing was launched
    finally:
        services.close()
    assert router_urls(fleet) == {fleet.fleet.worker_urls[0]}


def test_without_a_fleet_the_tab_says_how_to_run_one_and_can_do_nothing(tmp_path: Path) -> None:
    services = AppServices.create(tmp_path / "data", AccessPolicy("127.0.0.1", "secret"))
    try:
        demo = build_admin_app(services)
        assert fleet_handlers(demo) == {}
        shown = " ".join(str(block.value) for block in demo.blocks.values() if isinstance(block, gr.HTML))
        assert "python app.py --fleet fleet.json" in shown and "docs/FLEET.md" in shown
    finally:
        services.close()


def test_a_real_engine_added_next_to_pinned_workers_needs_gpus_of_its_own(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    spec = fleet_from_mapping({"engine": "sglang", "router": {"port": 30000},
                               "base": {"preset": "single-gpu", "model_path": str(tmp_path)},
                               "workers": [{"port": 30010, "gpus": [0]}, {"port": 30011, "gpus": [1]}]})
    template = spec.workers[0].settings
    unpinned = [f for f in check_addition(spec, launched_worker(spec, template)) if f.check == "gpus"]
    assert [(f.level, f.message, f.fix) for f in unpinned] == [
        ("error", "the workers here use GPUs 0, 1: without GPUs of its own this worker would load onto them too",
         "give it 1 unused GPU(s), e.g. 2")]
    assert not [f for f in check_addition(spec, launched_worker(spec, template, gpus=(2,))) if f.check == "gpus"]
