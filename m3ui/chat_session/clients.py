"""One ChatClient per endpoint, shared by every browser session (ChatClient is thread-safe)."""

from __future__ import annotations

import threading

from m3ui.client import ChatClient, EndpointConfig


class ClientPool:
    def __init__(self) -> None:
        self._clients: dict[EndpointConfig, ChatClient] = {}
        self._lock = threading.Lock()

    def client_for(self, endpoint: EndpointConfig) -> ChatClient:
        # Never closed on an endpoint change: answers still streaming may use the old one, and an app sees
        # only a handful of endpoints (one per engine launch) in its life.
        with self._lock:
            client = self._clients.get(endpoint)
            if client is None:
                client = self._clients[endpoint] = ChatClient(endpoint)
            return client
