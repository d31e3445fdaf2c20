"""ChatClient: opens streaming chat completions on an OpenAI-compatible server (sglang-kt or any other)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, cast

import openai

from m3ui.client.chunk_merging import merge_streamed_chunks
from m3ui.client.early_request import EarlyRequest
from m3ui.client.engine_abort import abort, new_rid, usage_at_end
from m3ui.client.http_library import http
from m3ui.client.request import ToolChoice, WireMessage, WireTool, chat_request_kwargs
from m3ui.client.settings import EndpointConfig, GenerationSettings
from m3ui.client.stream import ChatStream, HttpResponse, ReadGap
from m3ui.client.think_tags import InlineThinkSplitter
from m3ui.client.timing import Clock


class ChatClient:
    """Thread-safe; one per endpoint. `stream()` returns a ChatStream that has not sent anything yet; with a
    `read_gap` its body is read at most that often (see ChatStream)."""

    def __init__(self, endpoint: EndpointConfig, clock: Clock = time.monotonic) -> None:
        self.endpoint = endpoint
        self._clock = clock
        # every request sets its own: the user's stall limit (Any: a Timeout of the SDK's library, chosen at import)
        timeout: Any = self._timeout(GenerationSettings())
        self._sdk = openai.OpenAI(
            base_url=endpoint.base_url,
            api_key=endpoint.api_key,
            timeout=timeout,
            # A chat UI retries by the user's hand; silent retries would hide a dead engine for seconds.
            max_retries=0,
            # No pooled connections: stop() shuts a socket down, which must never be one reused by another request.
            # Each response's tokens reach the SDK's HTTP parser one read at a time, not one chunk each.
            http_client=openai.DefaultHttpxClient(timeout=timeout, limits=http.Limits(max_keepalive_connections=0),
                                                  event_hooks={"request": [merge_streamed_chunks]}),
        )
        # The SDK imports its chat resources at their first use (~0.2 s): at construction, not on the way to a
        # first token.
        self._completions = self._sdk.chat.completions.with_streaming_response

    def stream(
        self,
        messages: Sequence[WireMessage],
        settings: GenerationSettings,
        tools: Sequence[WireTool] = (),
        tool_choice: ToolChoice = "auto",
        read_gap: ReadGap | None = None,
        early: EarlyRequest | None = None,
    ) -> ChatStream:
        """`early`: a request sent before (see early_request.py), taken when it is this very one, else cancelled."""
        kwargs = self._kwargs(messages, settings, tools, tool_choice)
        open_stream, sent_at = self._opener(kwargs), None
        if early is not None:
            taken = early.take() if early.matches(self, kwargs) else None
            if taken is None:
                early.cancel()
            else:
                open_stream, sent_at = taken, early.sent_at
        return ChatStream(open_stream, self.endpoint.base_url, settings, self._content_filter(settings), self._clock,
                          read_gap, sent_at)

    def send_early(
        self,
        messages: Sequence[WireMessage],
        settings: GenerationSettings,
        tools: Sequence[WireTool] = (),
        tool_choice: ToolChoice = "auto",
    ) -> EarlyRequest:
        """Send now the request `stream()` with the same arguments will make (see early_request.py), under a
        request id of its own (outside what is compared), so that, not taken, it can be aborted on the engine
        and still report what it used (engine_abort.py)."""
        kwargs = self._kwargs(messages, settings, tools, tool_choice)
        rid = new_rid()
        body = cast(dict[str, object], kwargs["extra_body"])
        sent = {**kwargs, "extra_body": {**body, "rid": rid}}

        def wind_down(response: HttpResponse) -> tuple[int, int] | None:
            if not abort(self.endpoint.base_url, self.endpoint.api_key, rid):
                return None
            return usage_at_end(response)

        return EarlyRequest(self, kwargs, self._opener(sent), self._clock(), wind_down=wind_down)

    def _kwargs(self, messages: Sequence[WireMessage], settings: GenerationSettings, tools: Sequence[WireTool],
                tool_choice: ToolChoice) -> dict[str, object]:
        kwargs = chat_request_kwargs(self.endpoint.model, messages, settings, tools, tool_choice)
        kwargs["timeout"] = self._timeout(settings)
        return kwargs

    def _opener(self, kwargs: dict[str, object]) -> Callable[[], HttpResponse]:
        def open_stream() -> HttpResponse:
            # The raw streamed response (closed by ChatStream, as leaving the context manager would): its chunks
            # are parsed with orjson, not turned into pydantic models one by one.
            manager = self._completions.create(**kwargs)  # type: ignore[call-overload]  # chat_request_kwargs builds them
            return manager.__enter__().http_response

        return open_stream

    def _timeout(self, settings: GenerationSettings) -> object:
        """The read timeout is the user's stall limit: the longest wait for the next byte, headers included."""
        return http.Timeout(settings.stall_seconds, connect=self.endpoint.connect_timeout_s)

    def _content_filter(self, settings: GenerationSettings) -> InlineThinkSplitter:
        # An engine without a reasoning parser sends `<mm:think>..</mm:think>` inside the content: an opener at
        # the start gives itself away. In "enabled" mode the template opened the block, so the output starts
        # inside it without an opener: only the endpoint's flag can tell.
        enabled = settings.thinking_mode == "enabled"
        return InlineThinkSplitter(starts_in_reasoning=self.endpoint.reasoning_in_content and enabled)

    def close(self) -> None:
        self._sdk.close()
