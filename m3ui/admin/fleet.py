"""The admin's Fleet desk (no Gradio): what the router and each worker are doing, and adding or removing a worker
while the fleet serves.

It reads the FleetSupervisor's in-memory snapshot (phases, the router's worker list as last seen, restarts) and
asks the network only for what the snapshot lacks: the router's /health and each worker's own load (its
/v1/loads, read by the Monitor's parser), at most every PROBE_S whoever is watching, in parallel with short
timeouts. /v1/loads, not /get_load: both carry these figures in sglang-kt 0.7.2, but /get_load logs a
deprecation warning into the engine's log at every call. Every
change is checked whole before anything is launched or registered (launch/fleet/addition.py) and answers an
Outcome that says what happened or why not.
"""

from __future__ import annotations

import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx

from launch.fleet.addition import check_addition, launched_worker
from launch.fleet.router_api import RouterApiError
from launch.fleet.spec import AttachedWorker, LaunchedWorker
from launch.fleet.supervisor import FleetState, FleetSupervisor, WorkerStatus
from launch.settings import LaunchSettings, SettingsError, parse_assignment
from m3ui.admin.console import Outcome
from m3ui.monitor.engine_parse import EngineLoad, parse_loads

PROBE_S = 3.0
LOAD_TIMEOUT_S = 1.0  # one slow worker must not stall a view of the whole fleet for long
LOG_LINES = 200
ROUTER_CHOICE = "router"
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # the router colours its log lines
# The router logs two lines per request; those of the polls (m3ui's, the Monitor's, this desk's) drown the rest.
ROUTER_POLL = re.compile(r"method=GET uri=/(?:health|workers|v1/models|v1/loads|metrics)[\s?]")
ROUTER_SCAN = 5000  # router log lines read to find LOG_LINES that are not polls
NO_FLEET = "This app runs one engine, not a fleet: start it with `python app.py --fleet FILE` (docs/FLEET.md)."


@dataclass(frozen=True)
class WorkerRow:
    number: int  # 1-based, as the fleet lists it
    status: WorkerStatus
    load: EngineLoad | None  # the worker's own, summed over its data-parallel ranks
    load_note: str  # why there is no load figure ("" when there is one)


@dataclass(frozen=True)
class RouterRow:
    url: str
    policy: str
    state: FleetState
    detail: str
    pid: int | None
    healthy: bool | None  # its /health answered 200; None: not asked (no router process yet)
    simulated: bool = False  # the fleet's engines are simulated ("engine": "sim")


@dataclass(frozen=True)
class FleetView:
    router: RouterRow
    workers: tuple[WorkerRow, ...]


class FleetDesk:
    def __init__(self, fleet: FleetSupervisor | None) -> None:
        self.fleet = fleet
        # New launched workers copy the settings of a worker launched at start (the fleet's engine settings).
        local = fleet.fleet.local_workers if fleet is not None else ()
        self.template: LaunchSettings | None = local[0].settings if local else None
        self._lock = threading.Lock()
        self._probed_at = 0.0
        self._router_healthy: bool | None = None
        self._loads: dict[str, EngineLoad | str] = {}
        # kept: making a client per read costs ~10 ms of CPU (its TLS context)
        self._http = httpx.Client(timeout=LOAD_TIMEOUT_S, trust_env=False) if fleet is not None else None

    # --- watching --------------------------------------------------------------------------------------

    def view(self) -> FleetView | None:
        if self.fleet is None:
            return None
        snap = self.fleet.snapshot()
        probed = [w.url for w in snap.workers if not w.launched or w.state == "ready"]
        healthy, loads = self._probe(snap.router_url if snap.router_pid else None, probed)
        rows = []
        for i, worker in enumerate(snap.workers, 1):
            load = loads.get(worker.url) if worker.url in probed else "not ready"
            rows.append(WorkerRow(i, worker, load if isinstance(load, EngineLoad) else None,
                                  "" if isinstance(load, EngineLoad) else load or "not read yet"))
        router = RouterRow(snap.router_url, self.fleet.fleet.router.policy, snap.state, snap.detail, snap.router_pid,
                           healthy if snap.router_pid else None, simulated=self.fleet.fleet.engine.kind == "sim")
        return FleetView(router, tuple(rows))

    def _probe(self, router_url: str | None, workers: list[str]) -> tuple[bool | None, dict[str, EngineLoad | str]]:
        """The router's health and each worker's load, asked again once PROBE_S has passed (one asker at a time;
        the others get the last answers)."""
        with self._lock:
            fresh = time.monotonic() < self._probed_at + PROBE_S and set(workers) <= set(self._loads)
            if fresh:
                return self._router_healthy, dict(self._loads)
            with ThreadPoolExecutor(max_workers=8) as pool:
                health = pool.submit(self._router_answers, router_url) if router_url else None
                answers = dict(zip(workers, pool.map(self._load_or_reason, workers), strict=True))
            self._router_healthy = health.result() if health else None
            self._loads, self._probed_at = answers, time.monotonic()
            return self._router_healthy, dict(answers)

    def _router_answers(self, router_url: str) -> bool:
        assert self._http is not None
        try:
            return self._http.get(f"{router_url}/health").status_code == 200
        except httpx.HTTPError:
            return False

    def _load_or_reason(self, url: str) -> EngineLoad | str:
        """The worker's load, or why there is none."""
        assert self._http is not None
        try:
            response = self._http.get(f"{url.rstrip('/')}/v1/loads")
        except httpx.HTTPError as exc:
            return f"no answer ({type(exc).__name__})"
        if response.status_code != 200:
            return f"/v1/loads answered {response.status_code}"
        try:
            return parse_loads(response.json())
        except ValueError as exc:  # a body that is not JSON, or not sglang's shape
            return f"unexpected /v1/loads answer ({exc})"

    def log(self, choice: str | None) -> str:
        """The log tail of the router or a worker launched here."""
        if self.fleet is None:
            return NO_FLEET
        if not choice:
            return "(pick the router or a worker to see its log)"
        if choice == ROUTER_CHOICE:
            lines = [ANSI_ESCAPE.sub("", line) for line in self.fleet.router_log(ROUTER_SCAN)]
            if not lines:
                return "(no router log yet)"
            kept = [line for line in lines if not ROUTER_POLL.search(line)][-LOG_LINES:]
            return "\n".join(kept) or "(the router's latest lines are all status polls)"
        lines = self.fleet.worker_log(choice, LOG_LINES)  # type: ignore[assignment]  # the worker's lines: a tuple, or None
        if lines is None:
            return f"{choice} was not launched here: its log is on the machine that runs it."
        return "\n".join(lines) or "(no engine log yet)"

    def choices(self) -> list[str]:
        """What the log and remove picker offers: the router, then every worker's URL."""
        return [ROUTER_CHOICE, *(self.fleet.fleet.worker_urls if self.fleet is not None else ())]

    # --- changing the fleet ----------------------------------------------------------------------------

    def launch(self, port: str, gpus: str, changes: str) -> Outcome:
        """Launch one more engine here from the fleet's engine settings (a free port unless `port`)."""
        if self.fleet is None:
            return Outcome("error", NO_FLEET)
        if self.template is None:
            return Outcome("error", "Not launched: this fleet launched no engine here, so there are no engine "
                                    "settings to copy. Attach a running engine by its URL instead.")
        try:
            worker = launched_worker(self.fleet.fleet, self.template, _port(port), _gpus(gpus), _changes(changes))
        except ValueError as exc:  # SettingsError is one
            return Outcome("error", f"Not launched: {exc}")
        return self._add(worker, f"Launching a worker on {worker.url}: it joins the router once it is ready.")

    def attach(self, url: str) -> Outcome:
        """Put an engine that already runs (here or on another host) behind the router."""
        if self.fleet is None:
            return Outcome("error", NO_FLEET)
        url = (url or "").strip().rstrip("/")
        if not url:
            return Outcome("error", "Not attached: give the engine's URL, e.g. http://gpu-b:30000.")
        return self._add(AttachedWorker(url), f"Attached {url}: the router takes it now.")

    def _add(self, worker: AttachedWorker | LaunchedWorker, done: str) -> Outcome:
        assert self.fleet is not None
        verb = "launched" if isinstance(worker, LaunchedWorker) else "attached"
        findings = tuple(check_addition(self.fleet.fleet, worker, self.fleet.model))
        if any(f.is_error for f in findings):
            return Outcome("error", f"Not {verb}: fix what is listed below.", findings)
        try:
            self.fleet.add(worker)
        except (ValueError, RuntimeError) as exc:  # RouterApiError is a RuntimeError
            return Outcome("error", f"Not {verb}: {exc}")
        return Outcome("warning" if findings else "ok", done, findings)

    def remove(self, url: str | None) -> Outcome:
        """Take a worker out of the router and the fleet; one launched here is stopped."""
        if self.fleet is None:
            return Outcome("error", NO_FLEET)
        if not url or url == ROUTER_CHOICE:
            return Outcome("error", "Not removed: pick a worker first.")
        launched = any(w.url == url and w.launched for w in self.fleet.snapshot().workers)
        try:
            self.fleet.remove(url)
        except (ValueError, RouterApiError) as exc:
            return Outcome("error", f"Not removed: {exc}")
        return Outcome("ok", f"Removed {url} from the router" + (" and stopped it." if launched else
                                                                  "; it keeps running where it was started."))


def _port(text: str) -> int | None:
    text = (text or "").strip()
    if not text:
        return None
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise ValueError(f"port {text!r} is not a number from 1 to 65535 (leave it empty for a free one)")
    return int(text)


def _gpus(text: str) -> tuple[int, ...]:
    items = [item.strip() for item in (text or "").replace(" ", ",").split(",") if item.strip()]
    if not all(item.isdigit() for item in items):
        raise ValueError(f"GPUs {text!r}: list GPU numbers, e.g. 2,3")
    return tuple(int(item) for item in items)


def _changes(text: str) -> dict[str, Any]:
    """`field=value` lines (as `--set` takes them) over the fleet's engine settings."""
    changes: dict[str, Any] = {}
    for line in (text or "").splitlines():
        if line.strip():
            try:
                name, value = parse_assignment(line.strip())
            except SettingsError as exc:
                raise ValueError(f"setting {line.strip()!r}: {exc}") from None
            changes[name] = value
    if "port" in changes:
        raise ValueError("set the port in its own field")
    return changes
