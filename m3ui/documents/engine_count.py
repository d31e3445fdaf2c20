"""Token counts from the engine itself: sglang's `POST /v1/messages/count_tokens` (docs/ENGINE_CONTRACT.md §7).

It answers the chat template's prompt tokens of a whole request, so a text's own count is that of a one-message
request holding it less that of the same request with an empty message (the template's markers, asked once).
A route the engine does not serve (an sglang-router in front answers 404) is not asked again. Never raises:
None means "no count from the engine" (TokenCounter then estimates, and says so)."""

from __future__ import annotations

import json
import logging

import httpx

from launch.health import verifies_tls

log = logging.getLogger(__name__)

COUNT_PATH = "/v1/messages/count_tokens"
TIMEOUT_S = 10.0


class EngineCounter:
    """Counts through one engine (`base_url` without /v1). Thread-safe (httpx.Client is)."""

    def __init__(self, base_url: str, model: str, api_key: str | None = None, timeout_s: float = TIMEOUT_S) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key and api_key != "EMPTY" else {}
        self.base_url = base_url.rstrip("/")
        self._model = model
        self._client = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout_s, trust_env=False,
                                    verify=verifies_tls(self.base_url))
        self._framing: int | None = None
        self._unserved = False

    def _input_tokens(self, text: str) -> int | None:
        if self._unserved:
            return None
        body = {"model": self._model, "messages": [{"role": "user", "content": text}]}
        try:
            response = self._client.post(COUNT_PATH, content=json.dumps(body, ensure_ascii=False).encode(),
                                         headers={"Content-Type": "application/json"})
            tokens = response.json().get("input_tokens") if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError, AttributeError) as exc:
            log.info("no token count from %s: %s", self.base_url, exc)
            return None
        if response.status_code == 404:
            self._unserved = True
        return tokens if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0 else None

    def count(self, text: str) -> int | None:
        """The tokens of `text` as the engine reads it in a user message, or None when it gives no count."""
        if self._framing is None:
            self._framing = self._input_tokens("")
        total = self._input_tokens(text) if self._framing is not None else None
        return None if total is None or self._framing is None else max(0, total - self._framing)

    def close(self) -> None:
        self._client.close()
