"""A small engine stand-in for the monitor tests: a real HTTP server on 127.0.0.1 speaking the monitoring part
of ENGINE_CONTRACT.md §3 and §6 (/v1/loads, /server_info, /metrics, the recorder endpoints).

Tests change its answers, delays and recorder ring while it runs, and read which paths were hit. Without a
recorder mode a recorder call marks it `killed` (the real server dies) and answers 500.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np

from launch.sim.torch_save import save_tensors

RECORDER_PATHS = ("/start_expert_distribution_record", "/stop_expert_distribution_record",
                  "/dump_expert_distribution_record")


def loads_body(running: int = 1, queued: int = 0, used: int = 1000, total: int = 100_000,
               throughput: float = 42.5, cache_hit_rate: float = 0.25) -> dict:
    row = {"dp_rank": 0, "num_running_reqs": running, "num_waiting_reqs": queued, "num_used_tokens": used,
           "max_total_num_tokens": total, "token_usage": round(used / total, 4), "gen_throughput": throughput,
           "cache_hit_rate": cache_hit_rate, "utilization": 0.1, "max_running_requests": 48,
           "memory": {"weight_gb": 16.0, "kv_cache_gb": 13.7, "graph_gb": 0.5, "token_capacity": total},
           "num_total_reqs": running + queued}
    return {"timestamp": "2026-01-01T00:00:00+00:00", "version": "0.7.2", "dp_rank_count": 1, "loads": [row],
            "aggregate": {"total_running_reqs": running, "total_waiting_reqs": queued}}


def server_info_body(recorder_mode: str | None = None, buffer_size: int | None = None, gpu_masks: bool = False,
                     metrics: bool = False) -> dict:
    return {"model_path": "/models/m3", "served_model_name": "MiniMax-M3", "version": "0.7.2", "status": "ready",
            "expert_distribution_recorder_mode": recorder_mode,
            "expert_distribution_recorder_buffer_size": buffer_size if buffer_size is not None
            else (1000 if recorder_mode else None),
            "record_kt_gpu_expert_distribution": gpu_masks, "enable_metrics": metrics,
            "kt_cpuinfer": 8, "kt_threadpool_count": 2, "internal_states": [{"last_gen_throughput": 1.0}]}


@dataclass
class FakeRecorder:
    """sglang's stat ring (and GPU mask ring): rows zeroed by a dump, the write index kept."""

    folder: Path
    rows: int
    layers: int
    experts: int
    masks: bool = True
    recording: bool = False
    index: int = 0
    counts: np.ndarray = field(init=False)
    gpu: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.counts = np.zeros((self.rows, self.layers, self.experts), dtype=np.int32)
        self.gpu = np.zeros((self.rows, self.layers, self.experts), dtype=bool)

    def start(self) -> None:
        self.counts[...] = 0
        self.gpu[...] = False
        self.recording = True

    def record_pass(self, counts: np.ndarray, gpu_mask: np.ndarray) -> None:
        if self.recording:
            self.counts[self.index], self.gpu[self.index] = counts, gpu_mask
            self.index = (self.index + 1) % self.rows

    def dump(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        save_tensors(self.folder / f"expert_distribution_recorder_{time.time()}.pt",
                     {"rank": 0, "logical_count": self.counts, "average_utilization_rate_over_window": None},
                     device="cuda:0")
        if self.masks:
            save_tensors(self.folder / f"gpu_expert_distribution_{time.time()}.pt", {"gpu_expert_masks": self.gpu})
        self.counts[...] = 0
        self.gpu[...] = False


class FakeEngine:
    def __init__(self, recorder: FakeRecorder | None = None, api_key: str | None = None) -> None:
        self.loads: dict | None = loads_body()
        self.info = server_info_body(recorder_mode="stat" if recorder else None,
                                     gpu_masks=bool(recorder and recorder.masks))
        self.metrics_text: str | None = None
        self.delay_s: dict[str, float] = {}
        self.hits: list[tuple[str, str]] = []
        self.killed = False
        self.recorder = recorder
        self.api_key = api_key
        self.lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeEngine:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def paths_hit(self) -> set[str]:
        with self.lock:
            return {path for _, path in self.hits}

    def _answer(self, method: str, path: str, authorization: str | None) -> tuple[int, str, str]:
        with self.lock:
            self.hits.append((method, path))
        time.sleep(self.delay_s.get(path, 0.0))
        with self.lock:
            if self.api_key and path != "/metrics" and authorization != f"Bearer {self.api_key}":
                return 401, "application/json", json.dumps({"error": "Unauthorized"})
            if path == "/v1/loads" and self.loads is not None:
                return 200, "application/json", json.dumps(self.loads)
            if path == "/server_info":
                return 200, "application/json", json.dumps(self.info)
            if path == "/metrics" and self.metrics_text is not None:
                return 200, "text/plain; version=0.0.4", self.metrics_text
            if path in RECORDER_PATHS:
                return self._recorder(path)
        return 404, "application/json", json.dumps({"detail": "Not Found"})

    def _recorder(self, path: str) -> tuple[int, str, str]:
        if self.recorder is None or not self.info.get("expert_distribution_recorder_mode"):
            self.killed = True
            return 500, "text/plain", "Internal Server Error"
        if path.startswith("/start"):
            self.recorder.start()
            return 200, "text/plain", "Start recording the expert distribution.\n"
        if path.startswith("/stop"):
            self.recorder.recording = False
            return 200, "text/plain", "Stop recording the expert distribution.\n"
        self.recorder.dump()
        return 200, "text/plain", "Dump expert distribution record.\n"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        engine = self

        class Handler(BaseHTTPRequestHandler):
            def _respond(self) -> None:
                status, content_type, body = engine._answer(self.command, self.path.split("?")[0],
                                                            self.headers.get("Authorization"))
                data = body.encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up (timeout): nothing to do

            do_GET = do_POST = _respond  # noqa: N815

            def log_message(self, *args: object) -> None:
                pass

        return Handler
