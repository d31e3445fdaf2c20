"""The monitor's one way to talk to the engine: short timeouts, never raising, the outcome as data.

A monitor must not hang on an engine that is busy, starting or gone, so every request has a timeout and
its failure becomes an `HttpAnswer` whose `outcome` says which of those it looks like.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

import httpx

from launch.health import verifies_tls

# ok: answered in time; slow: answered, but after `slow_after_s`; timeout: connected, no answer in time;
# unreachable: no connection; http_error: an HTTP status >= 400.
HttpOutcome = Literal["ok", "slow", "timeout", "unreachable", "http_error"]


@dataclass(frozen=True)
class HttpAnswer:
    outcome: HttpOutcome
    elapsed_s: float
    status_code: int | None = None
    text: str = ""
    reason: str | None = None  # why it is not "ok"

    @property
    def answered(self) -> bool:
        """The engine sent a 2xx/3xx body (perhaps late)."""
        return self.outcome in ("ok", "slow")


class EngineHttp:
    """GET/POST to one engine. Thread-safe (httpx.Client is); close() when the target changes."""

    def __init__(self, base_url: str, api_key: str | None, timeout_s: float, slow_after_s: float) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.base_url = base_url.rstrip("/")
        self._slow_after_s = slow_after_s
        self._timeout_s = timeout_s
        self._client = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout_s, trust_env=False,
                                    verify=verifies_tls(self.base_url))

    def get(self, path: str, timeout_s: float | None = None) -> HttpAnswer:
        return self._request("GET", path, timeout_s)

    def post(self, path: str, timeout_s: float | None = None) -> HttpAnswer:
        return self._request("POST", path, timeout_s)

    def close(self) -> None:
        self._client.close()

    def _request(self, method: str, path: str, timeout_s: float | None) -> HttpAnswer:
        timeout = self._timeout_s if timeout_s is None else timeout_s
        started = time.perf_counter()
        try:
            response = self._client.request(method, path, timeout=timeout)
        except httpx.TimeoutException as error:
            elapsed = time.perf_counter() - started
            if isinstance(error, httpx.ConnectTimeout):
                return HttpAnswer("unreachable", elapsed, reason=f"no connection to {self.base_url} in {timeout:g} s")
            return HttpAnswer("timeout", elapsed, reason=f"{path} did not answer within {timeout:g} s")
        except (httpx.HTTPError, httpx.InvalidURL) as error:
            elapsed = time.perf_counter() - started
            why = str(error) or type(error).__name__
            return HttpAnswer("unreachable", elapsed, reason=f"cannot reach {self.base_url}: {why}")
        elapsed = time.perf_counter() - started
        if response.status_code >= 400:
            detail = response.text.strip()[:200]
            return HttpAnswer("http_error", elapsed, response.status_code, response.text,
                              f"{path} answered HTTP {response.status_code}" + (f": {detail}" if detail else ""))
        if elapsed > self._slow_after_s:
            return HttpAnswer("slow", elapsed, response.status_code, response.text,
                              f"{path} took {elapsed:.1f} s to answer")
        return HttpAnswer("ok", elapsed, response.status_code, response.text)
