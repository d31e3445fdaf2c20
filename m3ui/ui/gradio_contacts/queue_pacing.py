"""How often Gradio's queue looks for work while it has none.

Gradio's queue (gradio/queueing.py) has no wake-up signal: with nothing to do, its dispatcher sleeps 1 ms and
looks again, and its progress loop sleeps 10 ms, so each app (the chat's, the admin's) wakes the event loop
about 1,100 times a second: ~7% of a core for an app nobody uses, most of the idle app's CPU. Paced here, a
new job waits at most 5 ms to start instead of 1 ms; m3ui reports no gr.Progress, so nothing needs the 10 ms.
"""

from __future__ import annotations

import gradio as gr

DISPATCH_IDLE_S = 0.005
PROGRESS_IDLE_S = 0.25


def pace_queue(blocks: gr.Blocks) -> None:
    """After `blocks.queue(...)`: make its idle polling calmer."""
    queue = blocks._queue
    queue.sleep_when_free = DISPATCH_IDLE_S
    queue.progress_update_sleep_when_free = PROGRESS_IDLE_S
