"""A gateway request's JSON body: checked (an object, the known fields of the right type) before anything is
sent, and adjusted in two ways only, so the engine sees the client's request otherwise unchanged:
- its completion cap is set to what the person's reservation allows (m3ui/accounts/usage.py);
- an OpenAI stream that did not ask for usage asks for it (`stream_options.include_usage`): the gateway counts
  the tokens from it and keeps that chunk from the client, who did not ask for it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from m3ui.accounts.usage import prompt_bound


@dataclass(frozen=True)
class RouteSpec:
    cap_fields: tuple[str, ...]  # the fields that cap the completion, the first one set when none is
    prompt_fields: tuple[str, ...]  # what makes the prompt (bounded for the reservation)
    required: tuple[str, ...] = ()
    usage_option: bool = False  # OpenAI's stream_options.include_usage applies
    metered: bool = True


ROUTES: dict[str, RouteSpec] = {
    "/v1/chat/completions": RouteSpec(("max_completion_tokens", "max_tokens"), ("messages", "tools"),
                                      ("messages",), usage_option=True),
    "/v1/completions": RouteSpec(("max_tokens",), ("prompt", "suffix"), ("prompt",), usage_option=True),
    "/v1/responses": RouteSpec(("max_output_tokens",), ("input", "instructions", "tools"), ("input",)),
    "/v1/messages": RouteSpec(("max_tokens",), ("messages", "system", "tools"), ("messages", "max_tokens")),
    "/v1/messages/count_tokens": RouteSpec((), (), ("messages",), metered=False),
}

_INT = (int,)
_NUMBER = (int, float)
_TEXT_OR_LIST = (str, list)
KNOWN_TYPES: dict[str, tuple[type, ...]] = {
    "model": (str,), "stream": (bool,), "messages": (list,), "tools": (list,), "n": _INT,
    "max_tokens": _INT, "max_completion_tokens": _INT, "max_output_tokens": _INT, "stream_options": (dict,),
    "temperature": _NUMBER, "top_p": _NUMBER, "top_k": _INT, "system": _TEXT_OR_LIST, "input": _TEXT_OR_LIST,
    "prompt": _TEXT_OR_LIST, "instructions": (str,), "stop_sequences": (list,),
}


class BadBody(ValueError):
    """The body is not a request this route takes; the message says which field and why."""


@dataclass
class GatewayRequest:
    body: dict[str, object]
    spec: RouteSpec
    stream: bool
    strip_usage: bool = False  # the client did not ask for the usage chunk the gateway asked for

    @property
    def requested_cap(self) -> int | None:
        caps = [cap for f in self.spec.cap_fields if isinstance(cap := self.body.get(f), int)]
        return min(caps) if caps else None

    @property
    def prompt_bound(self) -> int:
        return prompt_bound(*(self.body.get(f) for f in self.spec.prompt_fields))

    def cap(self, max_tokens: int | None) -> None:
        """Send at most `max_tokens` completion tokens (None: the client's own cap stands)."""
        if max_tokens is None or not self.spec.cap_fields:
            return
        present = [f for f in self.spec.cap_fields if f in self.body] or [self.spec.cap_fields[-1]]
        for name in present:
            self.body[name] = max_tokens

    def encoded(self) -> bytes:
        return json.dumps(self.body, ensure_ascii=False, separators=(",", ":")).encode()


def parse_request(path: str, raw: bytes) -> GatewayRequest:
    """BadBody for malformed JSON, a body that is not an object, a missing required field or a wrong type."""
    spec = ROUTES[path]
    try:
        body = json.loads(raw)
    except RecursionError:
        raise BadBody("the JSON body is nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadBody(f"the body is not valid JSON: {str(exc)[:200]}") from None
    if not isinstance(body, dict):
        raise BadBody("the body must be a JSON object")
    for name in spec.required:
        if name not in body:
            raise BadBody(f"{name}: this field is required")
    for name, types in KEY_TYPES_ITEMS:
        value = body.get(name)
        if value is not None and (not isinstance(value, types) or (isinstance(value, bool) and bool not in types)):
            wanted = " or ".join("number" if t is float else _TYPE_NAMES.get(t, t.__name__) for t in types)
            raise BadBody(f"{name}: expected {wanted}, got {type(value).__name__}")
    for name in spec.cap_fields:
        if isinstance(cap := body.get(name), int) and cap < 1:
            raise BadBody(f"{name}: must be at least 1")
    if isinstance(body.get("n"), int) and body["n"] != 1:
        raise BadBody("n: the gateway serves one choice per request (n = 1)")
    stream = body.get("stream") is True
    request = GatewayRequest(body, spec, stream)
    if stream and spec.usage_option:
        options = body.get("stream_options") or {}
        if not isinstance(options, dict):
            raise BadBody("stream_options: expected object")
        if options.get("include_usage") is not True:
            body["stream_options"] = {**options, "include_usage": True}
            request.strip_usage = True
    return request


KEY_TYPES_ITEMS = tuple(KNOWN_TYPES.items())
_TYPE_NAMES = {str: "string", bool: "boolean", list: "array", dict: "object", int: "integer"}
