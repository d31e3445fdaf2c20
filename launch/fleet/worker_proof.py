"""Is a worker an engine, and which model does it serve? Asked before a worker gets any prompt, and again while it
serves: `/health` answering 200 is not enough (any web service does that), so its `/v1/models` must list the model
and its `/server_info` must be the engine's, naming the same model (ENGINE_CONTRACT.md §3).

A proof is conclusive when the worker answered: then it is an engine serving `model`, or it is not one, and
`problem` says what it sent. A worker that does not answer yet (starting, unreachable, too slow) proves nothing
either way: the router's own health checks and the engine supervisors deal with that.
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from launch.health import ReadinessProbe, verifies_tls

PROOF_TIMEOUT_S = 3.0
_PREVIEW_CHARS = 80


@dataclass(frozen=True)
class Proof:
    model: str | None = None  # the model it serves, when it proved to be an engine
    problem: str | None = None  # why it gets no prompts
    conclusive: bool = True  # it answered (False: it did not, so it proved nothing either way)

    @property
    def proven(self) -> bool:
        return self.problem is None

    def for_model(self, model: str | None) -> Proof:
        """This proof held against the fleet's model (None: not known yet, any model does)."""
        if not self.proven or model is None or self.model == model:
            return self
        return Proof(self.model, f"it serves {self.model!r}, not the fleet's {model!r}")


def prove_worker(url: str, api_key: str | None = None, timeout_s: float = PROOF_TIMEOUT_S) -> Proof:
    """Ask the worker at `url` (http://HOST:PORT) to prove it is an engine; never raises."""
    base = url.rstrip("/")
    with ReadinessProbe(base, api_key, timeout_s) as probe:
        readiness = probe.check()
    if readiness.health_status not in (None, 200):
        return Proof(problem=f"{base}/health answered {readiness.health_status}, not 200: the engine is not ready",
                     conclusive=False)
    if readiness.models_status is None:  # no answer to /health, or to /v1/models
        return Proof(problem=f"nothing answers at {base} ({readiness.error})", conclusive=False)
    if not readiness.ready:
        return Proof(problem=f"{base} is not an engine: {readiness.error}")
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        with httpx.Client(timeout=timeout_s, trust_env=False, verify=verifies_tls(base)) as client:
            info = client.get(f"{base}/server_info", headers=headers)
    except httpx.HTTPError as exc:
        return Proof(problem=f"{base}/server_info did not answer ({type(exc).__name__})", conclusive=False)
    served = _served_model(info)
    if served is None:
        return Proof(problem=f"{base} is not an engine: /server_info answered {info.status_code} with "
                             f"{_preview(info.text)}, not the engine's settings")
    if served not in readiness.model_ids:
        return Proof(problem=f"{base} is not one engine: its /server_info serves {served!r}, its /v1/models lists "
                             f"{', '.join(map(repr, readiness.model_ids))}")
    return Proof(served)


def _served_model(response: httpx.Response) -> str | None:
    """The served model name in an sglang `/server_info` answer (its server arguments), None when it is not one."""
    if response.status_code != 200:
        return None
    try:
        info = response.json()
    except ValueError:
        return None
    served = info.get("served_model_name") if isinstance(info, dict) else None
    model_path = info.get("model_path") if isinstance(info, dict) else None
    return served if isinstance(served, str) and served and isinstance(model_path, str) else None


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    if not flat:
        return "nothing"
    return repr(flat if len(flat) <= _PREVIEW_CHARS else flat[:_PREVIEW_CHARS] + "…")
