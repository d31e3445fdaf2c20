"""One answer being produced: the tool loop runs in a worker thread, the thread that shows it reads batches.

Why a worker thread: the UI must keep showing progress while the loop blocks (waiting for a token, for tools,
or for the user to approve a call), and must hand updates over at a bounded rate. `batches()` gives at most
one batch per update interval (a change waits at most that long), the first token at once (only text shown
starts the interval), a heartbeat when idle and the last batch when the loop ends. The interval is
UPDATE_INTERVAL_S while few answers stream; with many at once it grows so that the whole server makes at most
MAX_UPDATES_PER_S updates (each one is work in Gradio that on a small server would slow the engine down).
stop() and decide() may come from any thread, e.g. another browser request.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

from m3ui.chat_session.mailbox import Mailbox
from m3ui.client.early_request import EarlyRequest
from m3ui.client.events import ContentDelta, ReasoningDelta, ToolCall, ToolCallDelta, ToolCallStarted
from m3ui.client.settings import GenerationSettings
from m3ui.client.source import StreamSource
from m3ui.conversation import Conversation, LoopEvent, LoopFinished, LoopOptions, ToolLoop
from m3ui.tools.registry import ToolRegistry

log = logging.getLogger(__name__)

UPDATE_INTERVAL_S = 0.05  # measured: shows ~97% of 1000 tok/s at a sixth of per-token yields' browser CPU
# For all answers streaming in this process together. A frame costs Gradio about a millisecond of CPU however
# few tokens it carries (queue, postprocess, diff, the event stream's write): at 100 frames a second that was
# most of the app's CPU per token with 16 answers streaming (bench_chat_stream, issue 11). At 50, up to 2 answers
# still get 20 frames a second each, and 16 at once about 3 each.
MAX_UPDATES_PER_S = 50.0
MAX_INTERVAL_S = 0.5
# The engine's stream is read at most this often (see m3ui.client.stream): reading at the update interval would
# make token times (the speed shown) late by up to MAX_INTERVAL_S; 10 reads a second cost ~2% of a core for 16.
MAX_READ_GAP_S = 0.1
IDLE_TICK_S = 1.0  # an empty batch this often while nothing happens (lets the UI notice a closed page)
APPROVAL_TIMEOUT_S = 600.0  # an unanswered approval request denies the call


@dataclass(frozen=True)
class ApprovalRequested:
    """The loop waits for the user to approve or deny this call."""

    call: ToolCall


@dataclass(frozen=True)
class ApprovalDecided:
    call: ToolCall
    approved: bool


RunEvent = LoopEvent | ApprovalRequested | ApprovalDecided
_SHOWN_TEXT = (ContentDelta, ReasoningDelta, ToolCallStarted, ToolCallDelta)  # a batch with these starts the interval


class _Gauge:
    """How many answers are streaming in this process."""

    def __init__(self) -> None:
        self._count = 0
        self._lock = threading.Lock()

    def add(self, delta: int) -> None:
        with self._lock:
            self._count += delta

    @property
    def count(self) -> int:
        return self._count


STREAMING = _Gauge()


def update_interval(streaming: int) -> float:
    """Seconds between two updates of one answer when `streaming` answers run at once."""
    return min(MAX_INTERVAL_S, max(UPDATE_INTERVAL_S, streaming / MAX_UPDATES_PER_S))


class _Decision:
    def __init__(self) -> None:
        self.event = threading.Event()
        self.approved = False

    def resolve(self, approved: bool) -> None:
        self.approved = approved
        self.event.set()


class AnswerRun:
    def __init__(
        self,
        client: StreamSource,
        registry: ToolRegistry,
        settings: GenerationSettings,
        options: LoopOptions,
        conversation: Conversation,
        require_approval: bool = False,
        interval_s: float | None = None,
        early: EarlyRequest | None = None,
    ) -> None:
        self._loop = ToolLoop(client, registry, settings, options, self._ask if require_approval else None,
                              self._read_gap, early)
        self._conversation = conversation
        self._interval_s = interval_s  # None: update_interval() of the answers streaming now
        self._events: Mailbox[RunEvent] = Mailbox()
        self._urgent = threading.Event()  # an approval request or the end: hand it over without waiting
        self._lock = threading.Lock()
        self._stopped = False
        self._decision: _Decision | None = None
        self.started_at = 0.0  # wall clock, for the per-answer GPU hit rate
        self.ended_at = 0.0

    def _interval(self) -> float:
        return self._interval_s if self._interval_s is not None else update_interval(STREAMING.count)

    def _read_gap(self) -> float:
        return min(MAX_READ_GAP_S, self._interval())

    def start(self) -> AnswerRun:
        self.started_at = time.time()
        threading.Thread(target=self._pump, name="answer-run", daemon=True).start()
        return self

    def _pump(self) -> None:
        STREAMING.add(1)
        try:
            for event in self._loop.run(self._conversation):
                if isinstance(event, LoopFinished):
                    self.ended_at = time.time()
                self._put(event)
        except Exception as exc:  # a bug must end the answer with a message, not leave the page waiting
            log.exception("the tool loop failed")
            self.ended_at = time.time()
            self._put(LoopFinished("error", self._conversation, f"internal error: {exc}"))
        finally:
            STREAMING.add(-1)

    def _put(self, event: RunEvent) -> None:
        self._events.put(event)
        if isinstance(event, LoopFinished | ApprovalRequested):
            self._urgent.set()

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            decision, self._decision = self._decision, None
        self._loop.stop()
        if decision is not None:
            decision.resolve(False)

    def decide(self, approved: bool) -> bool:
        """Answer the pending approval request; False when there is none."""
        with self._lock:
            decision, self._decision = self._decision, None
        if decision is None:
            return False
        decision.resolve(approved)
        return True

    def _ask(self, call: ToolCall) -> bool:
        """The loop's approval hook: runs in the worker thread and blocks until decide() or stop()."""
        decision = _Decision()
        with self._lock:
            if self._stopped:
                return False
            self._decision = decision
        self._put(ApprovalRequested(call))
        approved = decision.event.wait(APPROVAL_TIMEOUT_S) and decision.approved
        with self._lock:
            if self._decision is decision:  # timed out
                self._decision = None
        self._put(ApprovalDecided(call, approved))
        return approved

    def batches(self) -> Iterator[list[RunEvent]]:
        """Events grouped for display; the last batch ends with LoopFinished.

        Between two batches this thread sleeps until the next one is due (or something urgent comes) and then
        takes everything queued meanwhile: it wakes once per update, not once per token."""
        next_due = 0.0
        held: list[RunEvent] = []  # what came after the end of the last batch
        while True:
            wait = next_due - time.monotonic()
            if wait > 0 and not held and self._urgent.wait(wait):
                self._urgent.clear()
            batch = held + self._events.take(0.0 if held else IDLE_TICK_S)  # at once when something is queued
            if not batch:
                yield []  # heartbeat
                continue
            # an approval request or the end ends a batch
            end = next((i for i, event in enumerate(batch) if isinstance(event, LoopFinished | ApprovalRequested)),
                       len(batch))
            batch, held = batch[: end + 1], batch[end + 1 :]
            yield batch
            if isinstance(batch[-1], LoopFinished):
                return
            if any(isinstance(event, _SHOWN_TEXT) for event in batch):
                next_due = time.monotonic() + self._interval()


class RunRegistry:
    """The answer running in each browser session, so a Stop or Approve click (another request) finds it."""

    def __init__(self) -> None:
        self._runs: dict[str, AnswerRun] = {}
        self._lock = threading.Lock()

    def begin(self, session: str, run: AnswerRun) -> bool:
        """Register `run`; False when this session already has one running."""
        with self._lock:
            if session in self._runs:
                return False
            self._runs[session] = run
            return True

    def end(self, session: str, run: AnswerRun) -> None:
        with self._lock:
            if self._runs.get(session) is run:
                del self._runs[session]

    def running(self, session: str) -> bool:
        with self._lock:
            return session in self._runs

    def stop(self, session: str) -> bool:
        with self._lock:
            run = self._runs.get(session)
        if run is None:
            return False
        run.stop()
        return True

    def decide(self, session: str, approved: bool) -> bool:
        with self._lock:
            run = self._runs.get(session)
        return run is not None and run.decide(approved)
