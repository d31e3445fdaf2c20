"""One ChatClient per endpoint, shared by every browser session (ChatClient is thread-safe)."""

from __future__ import annotations

import logging
import threading

from m3ui.client import ChatClient, EndpointConfig

log = logging.getLogger(__name__)
# Nothing listens here: the warm-up client is never sent a request.
WARM_UP_ENDPOINT = EndpointConfig(base_url="http://127.0.0.1:9/v1")


class ClientPool:
    def __init__(self) -> None:
        self._clients: dict[EndpointConfig, ChatClient] = {}
        self._lock = threading.Lock()
        self.warmed = threading.Event()
        threading.Thread(target=self._warm_up, name="sdk-warm-up", daemon=True).start()

    def client_for(self, endpoint: EndpointConfig) -> ChatClient:
        # Never closed on an endpoint change: answers still streaming may use the old one, and an app sees
        # only a handful of endpoints (one per engine launch) in its life.
        with self._lock:
            client = self._clients.get(endpoint)
            if client is None:
                client = self._clients[endpoint] = ChatClient(endpoint)
            return client

    def _warm_up(self) -> None:
        """Import what the openai SDK imports at its first chat request (~0.2 s here), so that the first answer
        after the app starts does not wait for it."""
        try:
            ChatClient(WARM_UP_ENDPOINT).close()
        except Exception:  # only a head start: the first answer imports it anyway
            log.exception("warming the openai SDK up failed")
        finally:
            self.warmed.set()
