"""Every admin event handler goes through `AdminGuard.on`: the user is checked before the handler runs.

The admin app is mounted with its own login, but any client that reaches a Gradio app can call any of
its handlers (timer ticks and private ones included), so each handler refuses non-admins itself too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gradio as gr

from m3ui.access import AccessDenied, AccessPolicy

API_PREFIX = "admin_"


class AdminGuard:
    def __init__(self, policy: AccessPolicy) -> None:
        self.policy = policy

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        policy = self.policy

        def handler(request: gr.Request, *args: Any) -> Any:
            try:
                policy.require_admin(request.username if request is not None else None)
            except AccessDenied as exc:
                raise gr.Error(str(exc), title="Refused") from None
            return fn(*args)

        handler.__name__ = handler.__qualname__ = f"guarded_{getattr(fn, '__name__', 'handler')}"
        return handler

    def on(self, triggers: Any, fn: Callable[..., Any], inputs: Sequence[Any] | Any, outputs: Sequence[Any] | Any,
           name: str, **kwargs: Any) -> Any:
        """`gr.on` with the user check; every admin endpoint is named `admin_<name>` and is private."""
        kwargs.setdefault("show_progress", "minimal")
        return gr.on(triggers, self.wrap(fn), inputs=_listed(inputs), outputs=_listed(outputs),
                     api_name=API_PREFIX + name, api_visibility="private", **kwargs)


def _listed(blocks: Sequence[Any] | Any) -> list[Any]:
    if blocks is None:
        return []
    return list(blocks) if isinstance(blocks, list | tuple) else [blocks]
