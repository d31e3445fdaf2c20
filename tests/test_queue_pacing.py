"""Gradio's queue, idle, wakes the event loop far less often than its own 1 ms polling (issue 11: that polling
was most of the idle app's CPU)."""

from __future__ import annotations

import asyncio
import time

import gradio as gr
from gradio import queueing

from m3ui.ui.gradio_contacts.queue_pacing import pace_queue


def _idle_looks(blocks: gr.Blocks, seconds: float, monkeypatch) -> int:
    """How many times the queue's dispatcher looks for work in `seconds` with none to do."""
    looks = 0
    length = queueing.Queue.__len__

    def counted(self: queueing.Queue) -> int:
        nonlocal looks
        looks += 1
        return length(self)

    monkeypatch.setattr(queueing.Queue, "__len__", counted)
    queue = blocks._queue
    queue.active_jobs = [None] * queue.max_thread_count

    async def idle() -> None:
        task = asyncio.create_task(queue.start_processing())
        await asyncio.sleep(seconds)
        queue.stopped = True
        await task

    asyncio.run(idle())
    return looks


def _app() -> gr.Blocks:
    with gr.Blocks() as demo:
        gr.Textbox()
    demo.queue(default_concurrency_limit=None)
    return demo


def test_an_idle_queue_looks_for_work_at_most_every_few_milliseconds(monkeypatch):
    demo = _app()
    pace_queue(demo)
    started = time.monotonic()
    looks = _idle_looks(demo, 0.5, monkeypatch)
    elapsed = time.monotonic() - started
    assert looks <= elapsed / 0.005 + 2  # Gradio's own pace is every 1 ms: ~500 here
    assert looks >= 10  # it still looks: a new job waits a few ms at most
