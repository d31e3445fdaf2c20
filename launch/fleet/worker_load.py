"""A worker's own view of its load, summed over its data-parallel ranks: requests running and waiting, and
tokens held in its KV cache. The router's count of requests it has in flight there is in its `GET /workers`.

Read from `GET /v1/loads`, not `/get_load`: both carry these figures in sglang-kt 0.7.2, but `/get_load` logs a
deprecation warning into the engine's log at every call, and the admin asks every few seconds."""

from __future__ import annotations

from dataclasses import dataclass

import httpx

TIMEOUT_S = 1.0  # one slow worker must not stall a view of the whole fleet for long


@dataclass(frozen=True)
class WorkerLoad:
    running: int
    waiting: int
    tokens: int  # tokens held in the KV cache


class LoadUnavailable(RuntimeError):
    """The worker did not answer, or not with sglang's shape; the message says which."""


def load_client() -> httpx.Client:
    """A client to keep for every read (making one costs tens of ms of CPU: its TLS context)."""
    return httpx.Client(timeout=TIMEOUT_S, trust_env=False)


def read_load(client: httpx.Client, worker_url: str) -> WorkerLoad:
    try:
        response = client.get(f"{worker_url.rstrip('/')}/v1/loads")
    except httpx.HTTPError as exc:
        raise LoadUnavailable(f"no answer ({type(exc).__name__})") from None
    if response.status_code != 200:
        raise LoadUnavailable(f"/v1/loads answered {response.status_code}")
    try:
        ranks = response.json()["loads"]
        return WorkerLoad(sum(int(r["num_running_reqs"]) for r in ranks),
                          sum(int(r["num_waiting_reqs"]) for r in ranks),
                          sum(int(r["num_used_tokens"]) for r in ranks))
    except (ValueError, KeyError, TypeError) as exc:
        raise LoadUnavailable(f"unexpected /v1/loads answer ({exc!r})") from None
