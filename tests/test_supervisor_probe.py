"""The supervisor's readiness probe is cheap to repeat: one HTTP client per engine, no certificate store for a
plain http:// engine, and fewer probes once the engine is ready (issue 11: building a client per probe, with
its SSL context, was the idle app's largest cost)."""

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import certifi
import httpx
import pytest

import launch.supervisor
from launch.health import ReadinessProbe
from launch.supervisor import Supervisor


@dataclass
class Engine:
    url: str
    health_checks: int = 0


@pytest.fixture
def engine() -> Iterator[Engine]:
    """A stand-in that is ready at once and counts the /health checks it answers."""
    served = Engine("")

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as uvicorn

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            body = b""
            if self.path == "/health":
                served.health_checks += 1
            elif self.path == "/v1/models":
                body = json.dumps({"data": [{"id": "MiniMax-M3"}]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    served.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield served
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


class CountingClient(httpx.Client):
    made = 0

    def __init__(self, *args: object, **kwargs: object) -> None:
        type(self).made += 1
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]


def test_an_engine_is_probed_over_one_client_however_many_probes(engine, tmp_path, monkeypatch):
    monkeypatch.setattr(httpx, "Client", CountingClient)
    monkeypatch.setattr(launch.supervisor, "READY_PROBE_INTERVAL_S", 0.0)  # probe at every tick once ready
    CountingClient.made = 0
    supervisor = Supervisor(tmp_path / "m3ui", tick_s=0.01)
    try:
        supervisor.attach(engine.url)
        assert supervisor.wait_ready(10)
        deadline = time.monotonic() + 10
        while engine.health_checks < 10 and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        supervisor.close()
    assert engine.health_checks >= 10
    assert CountingClient.made == 1


def test_a_plain_http_engine_loads_no_certificate_store_and_https_still_verifies(engine, monkeypatch):
    loads: list[str] = []
    real_where = certifi.where
    monkeypatch.setattr(certifi, "where", lambda: loads.append("ca") or real_where())
    with ReadinessProbe(engine.url) as probe:
        assert probe.check().ready
        assert probe.check().model_ids == ("MiniMax-M3",)
    assert loads == []
    with ReadinessProbe("https://127.0.0.1:1") as probe:  # certificates are checked for https
        assert not probe.check().ready
    assert loads == ["ca"]


def test_a_ready_engine_is_probed_less_often(engine, tmp_path):
    supervisor = Supervisor(tmp_path / "m3ui", tick_s=0.05)
    try:
        supervisor.attach(engine.url)
        assert supervisor.wait_ready(10)
        ready_at = engine.health_checks
        time.sleep(4.5)
        after = engine.health_checks - ready_at
    finally:
        supervisor.close()
    assert after <= 1  # the first probe after ready comes READY_PROBE_INTERVAL_S later (it was every 2 s)
