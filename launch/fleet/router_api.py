"""sglang-router's own HTTP API, as 0.3.2 serves it: `/health`, the worker list (`GET /workers`), and adding
(`POST /workers {"url": ...}`, 202: queued) or removing (`DELETE /workers/{id}`: the worker's UUID from the
list, not its URL) a worker. Short timeouts; a router that does not answer is a RouterApiError."""

from __future__ import annotations

from dataclasses import dataclass

import httpx

TIMEOUT_S = 2.0


class RouterApiError(RuntimeError):
    """The router did not answer, or refused."""


@dataclass(frozen=True)
class RouterWorker:
    id: str
    url: str
    healthy: bool
    load: int


def _call(method: str, url: str, **kwargs: object) -> httpx.Response:
    try:
        with httpx.Client(timeout=TIMEOUT_S, trust_env=False) as client:
            return client.request(method, url, **kwargs)  # type: ignore[arg-type]  # the callers pass httpx's own keywords
    except httpx.HTTPError as exc:
        raise RouterApiError(f"{method} {url}: {type(exc).__name__}: {exc}") from None


def router_healthy(router_url: str) -> bool:
    try:
        return _call("GET", f"{router_url}/health").status_code == 200
    except RouterApiError:
        return False


def list_workers(router_url: str) -> list[RouterWorker]:
    response = _call("GET", f"{router_url}/workers")
    try:
        items = response.json()["workers"]
        return [RouterWorker(str(w["id"]), str(w["url"]).rstrip("/"), bool(w["is_healthy"]), int(w.get("load", 0)))
                for w in items]
    except (ValueError, KeyError, TypeError) as exc:
        raise RouterApiError(f"GET {router_url}/workers: unexpected answer ({exc!r}): {response.text[:200]}") from None


def add_worker(router_url: str, worker_url: str) -> None:
    response = _call("POST", f"{router_url}/workers", json={"url": worker_url})
    if response.status_code not in (200, 202):
        raise RouterApiError(f"adding {worker_url}: {response.status_code} {response.text[:200]}")


def remove_worker(router_url: str, worker: RouterWorker) -> None:
    response = _call("DELETE", f"{router_url}/workers/{worker.id}")
    if response.status_code not in (200, 202, 404):  # 404: already gone
        raise RouterApiError(f"removing {worker.url}: {response.status_code} {response.text[:200]}")
