"""On a fleet, an answer that broke off: the worker serving it died, and sglang-router just closes the client's
stream (no error event, no final chunk). The router itself is fine and the other workers serve, so the chat says
so and offers a retry on another worker instead of "wait for the engine"."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx

from launch.fleet.router_api import RouterApiError, list_workers
from m3ui.engine_link import EngineLink

HEALTH_TIMEOUT_S = 1.0


@dataclass(frozen=True)
class WorkerLost:
    healthy: int  # workers of the fleet that answer /health now

    @property
    def text(self) -> str:
        if not self.healthy:
            return ("The engine serving this answer stopped mid-answer, and no worker of the fleet is healthy now. "
                    "What arrived is kept: press Regenerate once a worker is back.")
        workers = "worker" if self.healthy == 1 else "workers"
        return (f"The engine serving this answer stopped mid-answer; the fleet has {self.healthy} healthy {workers}. "
                "What arrived is kept: press Regenerate to retry on another.")


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=HEALTH_TIMEOUT_S, trust_env=False).status_code == 200
    except httpx.HTTPError:
        return False


def worker_lost(router_url: str | None) -> WorkerLost | None:
    """When `router_url` is a router: how many of its workers are healthy now, each asked directly (the router
    may not have noticed the death yet, and a killed worker's port refuses at once). None: not a router."""
    if not router_url:
        return None
    try:
        urls = [w.url for w in list_workers(router_url)]
    except RouterApiError:
        return None
    with ThreadPoolExecutor(max_workers=max(1, min(8, len(urls)))) as pool:
        return WorkerLost(sum(pool.map(_healthy, urls)))


def answer_failure(link: EngineLink) -> str | WorkerLost | None:
    """Why an answer broke off: the engine's own diagnosis when it died, else on a router the fleet's state."""
    status = link.status()
    if status.failure:
        return status.failure
    return worker_lost(status.url) if status.mode == "attached" else None
