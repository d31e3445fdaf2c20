"""Is the engine ready? `/health` answers 200 AND `/v1/models` lists a model — an open port is not enough.

sglang answers `/health` 503 until its warm-up request ends; `/health` is never behind the API key but
`/v1/models` is (ENGINE_CONTRACT.md §3). The probe never raises: a failure is data with its reason.

A supervisor probes its engine every few seconds for as long as it runs, so `ReadinessProbe` keeps one client
per engine: building an httpx client builds an SSL context from certifi's bundle (~100 ms of CPU), which cost
far more than the two GETs, and a plain http:// engine needs no certificate store at all.
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from launch.settings import LaunchSettings

PROBE_TIMEOUT_S = 2.0
KEEPALIVE_S = 1.0  # below uvicorn's 5 s keep-alive: one check reuses its connection, the next opens afresh
_WILDCARD_HOSTS = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}


@dataclass(frozen=True)
class Readiness:
    ready: bool
    health_status: int | None = None
    models_status: int | None = None
    model_ids: tuple[str, ...] = ()
    error: str | None = None  # why not ready, when it is not
    timed_out: bool = False  # it accepted the connection but did not answer in time: hung, or overloaded
    simulated: bool = False  # m3ui's simulated engine says so in /v1/models (attached engines included)


def engine_url(settings: LaunchSettings) -> str:
    """Where to reach an engine started with `settings` from this machine (a wildcard host → loopback)."""
    host = _WILDCARD_HOSTS.get(settings.host, settings.host)
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{settings.port}"


def verifies_tls(url: str) -> bool:
    """httpx's `verify` for a client of `url`: False for plain http://, whose client would otherwise load a CA
    bundle it never uses (most of the cost of building one); https:// keeps verifying certificates."""
    return not url.lower().startswith("http://")


class ReadinessProbe:
    """Readiness checks of one engine over one client, kept until `close()`. Thread-safe (httpx.Client is)."""

    def __init__(self, base_url: str, api_key: str | None = None, timeout_s: float = PROBE_TIMEOUT_S) -> None:
        self.base_url = base_url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout_s = timeout_s
        # Connections live shorter than any server's keep-alive, so a check never meets one the server closed.
        self._client = httpx.Client(timeout=timeout_s, trust_env=False, verify=verifies_tls(self.base_url),
                                    limits=httpx.Limits(keepalive_expiry=KEEPALIVE_S))

    def check(self) -> Readiness:
        base = self.base_url
        try:
            health = self._client.get(f"{base}/health")
            if health.status_code != 200:
                return Readiness(False, health.status_code, error=f"/health answered {health.status_code}")
            models = self._client.get(f"{base}/v1/models", headers=self._headers)
        except httpx.TimeoutException as exc:
            return Readiness(False, error=f"no answer within {self._timeout_s:g} s ({type(exc).__name__})",
                             timed_out=True)
        except (httpx.HTTPError, httpx.InvalidURL) as exc:  # InvalidURL (e.g. a bad port) is not an HTTPError
            return Readiness(False, error=f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
        if models.status_code != 200:
            return Readiness(False, 200, models.status_code, error=f"/v1/models answered {models.status_code}")
        cards = _model_cards(models)
        ids = tuple(str(m["id"]) for m in cards if m.get("id") is not None)
        if not ids:
            return Readiness(False, 200, 200, error="/v1/models lists no model")
        return Readiness(True, 200, 200, ids, simulated=any(m.get("m3ui_simulated") is True for m in cards))

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> ReadinessProbe:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def probe_readiness(base_url: str, api_key: str | None = None, timeout_s: float = PROBE_TIMEOUT_S) -> Readiness:
    """One readiness check of the engine at `base_url` (e.g. http://127.0.0.1:30000); to check the same engine
    again and again, keep a ReadinessProbe instead."""
    with ReadinessProbe(base_url, api_key, timeout_s) as probe:
        return probe.check()


def _model_cards(response: httpx.Response) -> list[dict[str, object]]:
    try:
        data = response.json().get("data")
    except (ValueError, AttributeError):
        return []
    return [m for m in data if isinstance(m, dict)] if isinstance(data, list) else []
