"""The engine panel's source: /v1/loads every tick, /server_info now and then, /metrics when enabled.

States: "ok"; "slow" (it answered late, or not within the timeout while connected: a busy or stuck
engine); "unreachable" (no connection: stopped, starting before its port opens, wrong URL); "error" (it
answered something unusable, e.g. 401 for a wrong API key); "not_configured" (no engine to watch).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Literal

import httpx

from m3ui.monitor.engine_parse import (
    EngineCounters,
    EngineLoad,
    EngineRates,
    ServerInfo,
    parse_loads,
    parse_metrics,
    parse_server_info,
    rates_between,
)
from m3ui.monitor.http import EngineHttp, HttpAnswer
from m3ui.monitor.target import MonitorTarget

EngineState = Literal["pending", "not_configured", "ok", "slow", "unreachable", "error"]


@dataclass(frozen=True)
class EngineSnapshot:
    time: float
    state: EngineState
    reason: str | None = None  # why the state is not "ok"
    latency_s: float | None = None  # of /v1/loads
    load: EngineLoad | None = None
    rates: EngineRates | None = None  # from /metrics; None without --enable-metrics
    info: ServerInfo | None = None

    @property
    def reachable(self) -> bool:
        return self.state in ("ok", "slow", "error")


def _json(answer: HttpAnswer) -> object:
    try:
        return json.loads(answer.text)
    except ValueError as error:
        raise ValueError(f"not JSON ({error})") from None


class EngineSource:
    """Not thread-safe: one thread samples it (the sampler's engine thread)."""

    def __init__(self, timeout_s: float, slow_after_s: float, info_every_s: float = 30.0) -> None:
        self._timeout_s = timeout_s
        self._slow_after_s = slow_after_s
        self._info_every_s = info_every_s
        self._http: EngineHttp | None = None
        self._setup_error: str | None = None
        self._reset_engine_state()
        self.epoch = 0  # grows each time the engine (re)appears: its recorder must be started again

    def _reset_engine_state(self) -> None:
        self._info: ServerInfo | None = None
        self._info_read_at = 0.0
        self._counters: tuple[float, EngineCounters] | None = None
        self._answering = False

    def set_target(self, target: MonitorTarget) -> None:
        self.close()
        self._reset_engine_state()
        self._setup_error = None
        if target.engine_url:
            try:
                self._http = EngineHttp(target.engine_url, target.api_key, self._timeout_s, self._slow_after_s)
            except httpx.InvalidURL as error:  # raised when the client is built; other bad URLs fail per request
                self._setup_error = f"cannot use engine URL {target.engine_url!r}: {error}"

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    def sample(self) -> EngineSnapshot:
        now = time.time()
        if self._http is None:
            if self._setup_error:
                return EngineSnapshot(now, "error", self._setup_error)
            return EngineSnapshot(now, "not_configured", "no engine is running or attached")
        answer = self._http.get("/v1/loads")
        if not answer.answered:
            return self._failed(now, answer)
        if not self._answering:
            self._answering = True
            self.epoch += 1
        try:
            load = parse_loads(_json(answer))
        except ValueError as error:
            return EngineSnapshot(now, "error", f"unexpected /v1/loads answer: {error}", answer.elapsed_s)
        info = self._server_info()
        return EngineSnapshot(
            now, "slow" if answer.outcome == "slow" else "ok", answer.reason, answer.elapsed_s, load,
            self._rates(info), info,
        )

    def _failed(self, now: float, answer: HttpAnswer) -> EngineSnapshot:
        if answer.outcome == "unreachable":
            self._reset_engine_state()  # whatever answers next may be another engine
            return EngineSnapshot(now, "unreachable", answer.reason, answer.elapsed_s)
        if answer.outcome == "timeout":
            return EngineSnapshot(now, "slow", answer.reason, answer.elapsed_s, info=self._info)
        reason = answer.reason
        if answer.status_code == 401:
            reason = "the engine refused the API key (HTTP 401): give the key it was started with"
        return EngineSnapshot(now, "error", reason, answer.elapsed_s, info=self._info)

    def _server_info(self) -> ServerInfo | None:
        assert self._http is not None
        if self._info is not None and time.monotonic() - self._info_read_at < self._info_every_s:
            return self._info
        answer = self._http.get("/server_info")
        if answer.answered:
            try:
                self._info = parse_server_info(_json(answer))
                self._info_read_at = time.monotonic()
            except ValueError:
                pass  # keep the last one; /v1/loads still says how the engine is doing
        return self._info

    def _rates(self, info: ServerInfo | None) -> EngineRates | None:
        if self._http is None or info is None or not info.metrics_enabled:
            return None
        answer = self._http.get("/metrics")
        if not answer.answered:
            return None
        try:
            counters = parse_metrics(answer.text)
        except ValueError:
            return None
        now = time.monotonic()
        previous, self._counters = self._counters, (now, counters)
        return None if previous is None else rates_between(previous[1], counters, now - previous[0])
