"""Run several tool calls at once, each bounded by a timeout."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator, Sequence

from m3ui.client.events import ToolCall
from m3ui.tools.registry import ToolRegistry
from m3ui.tools.result import ToolResult


def run_tool_calls(
    registry: ToolRegistry, calls: Sequence[ToolCall], timeout_s: float
) -> Iterator[tuple[int, ToolResult]]:
    """Yield (position in `calls`, result) once per call, in the order they finish; a call still running at
    the timeout yields an error result.

    Each call gets its own daemon thread rather than a pool worker: Python cannot kill a thread, and a
    stuck tool in a daemon thread can neither block the next turn nor keep the process from exiting.
    """
    done: queue.Queue[tuple[int, ToolResult]] = queue.Queue()
    pending = dict(enumerate(calls))  # by position: a buggy engine may repeat an id
    for position, call in pending.items():
        threading.Thread(
            target=lambda p=position, c=call: done.put((p, registry.invoke(c))), name=f"tool-{call.name}", daemon=True
        ).start()
    deadline = time.monotonic() + timeout_s
    while pending:
        try:
            position, result = done.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            break
        del pending[position]
        yield position, result
    for position, call in pending.items():
        yield position, ToolResult.error(call, f"{call.name} did not answer within {timeout_s:g} s (timed out)",
                                         timeout_s)
