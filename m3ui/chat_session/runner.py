"""ChatRunner: starts answers for browser sessions on the engine that is ready now, one at a time per session,
and saves each finished answer into its chat."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Literal

from m3ui.accounts.meter import AnswerMeter, MeteredClient
from m3ui.accounts.usage import QuotaRefused
from m3ui.chat_session.answer_run import AnswerRun, RunRegistry
from m3ui.chat_session.clients import ClientPool
from m3ui.chat_session.early_starts import EarlyStarts
from m3ui.chat_session.live_answer import LiveAnswer, not_ready_note
from m3ui.chat_session.transcript import CallView, StepView
from m3ui.chat_session.worker_lost import WorkerLost
from m3ui.client import ChatClient, EndpointConfig, ErrorKind, GenerationSettings
from m3ui.client.early_request import EarlyRequest
from m3ui.conversation import LoopOptions, ToolLoop
from m3ui.conversation.library import ChatNote, SavedChat
from m3ui.tools.registry import ToolRegistry

log = logging.getLogger(__name__)

AnswerPhase = Literal["started", "streaming", "answered", "done"]
# (start, end) wall-clock seconds of one answer -> share of expert activations served by the GPU meanwhile
AnswerHitRate = Callable[[float, float], float | None]
# The engine's own one-line diagnosis when it died or failed, or on a fleet the worker lost (None while it is fine)
EngineFailure = Callable[[], str | WorkerLost | None]
# An answer that broke off this way may mean the engine died: its supervisor notices within a tick or two
DEATH_SIGNS: frozenset[ErrorKind] = frozenset({"dropped", "connection"})
FAILURE_WAIT_S = 2.0
FAILURE_POLL_S = 0.1
PARTIAL_SAVE_S = 1.0  # an answer that streams is saved at most this often, so a killed app keeps what arrived


class SessionBusy(RuntimeError):
    """This browser session already has an answer streaming."""


@dataclass(frozen=True)
class AnswerRequest:
    chat: SavedChat  # ends with the question to answer
    settings: GenerationSettings
    options: LoopOptions = LoopOptions()
    registry: ToolRegistry = ToolRegistry()
    require_approval: bool = False
    user: str | None = None  # the signed-in person: each engine request reserves their tokens, settled at its end
    early: EarlyRequest | None = None  # its first request, maybe sent already (see send_early): taken if the same


@dataclass(frozen=True)
class AnswerUpdate:
    """started: the question is saved; streaming: `live` holds the answer so far; answered: `chat` holds the
    finished answer while its GPU hit rate is looked up (the session is still busy); done: the last one."""

    phase: AnswerPhase
    chat: SavedChat  # the question's chat; once answered, with the answer (and any note) saved into it
    live: tuple[StepView, ...] = ()
    awaiting_approval: CallView | None = None  # the tool call waiting for the user's decision
    so_far: SavedChat | None = None  # streaming, at most once per PARTIAL_SAVE_S: the chat with the answer so far

    @property
    def done(self) -> bool:
        return self.phase == "done"


class ChatRunner:
    def __init__(
        self,
        endpoint: Callable[[], EndpointConfig | None],
        engine_label: Callable[[], str],
        hit_rate: AnswerHitRate | None = None,
        engine_failure: EngineFailure | None = None,
        meter: AnswerMeter | None = None,
    ) -> None:
        self._endpoint, self._engine_label, self._hit_rate = endpoint, engine_label, hit_rate
        self._engine_failure = engine_failure
        self._meter = meter
        self._clients = ClientPool()
        self.runs = RunRegistry()
        self.early = EarlyStarts()

    def send_early(self, page: str, question: str, request: AnswerRequest) -> bool:
        """Send `request`'s first engine request now, for the answer to `question` that `page` is about to ask
        for (its handler takes it with `early.take`: m3ui.client.early_request); False when its answer would not
        start (the person is over quota, the engine is not ready) or started already without it."""
        if not self.early.wanted(page, question) or (self._meter is not None and self._meter.refusal(request.user)):
            return False
        endpoint = self._endpoint()
        if endpoint is None:
            return False
        loop = ToolLoop(self._client(endpoint, request.user), request.registry, request.settings,
                        request.options)
        try:
            early = loop.send_early(request.chat.conversation)
        except QuotaRefused:
            return False
        self.early.put(page, request.user, question, early)
        return True

    def _client(self, endpoint: EndpointConfig, user: str | None) -> ChatClient | MeteredClient:
        """The engine's client, each of whose requests reserves the person's tokens first when there is a meter."""
        client = self._clients.client_for(endpoint)
        return client if self._meter is None else self._meter.client(client, user)

    def start(self, session: str, request: AnswerRequest) -> AnswerRun | ChatNote:
        """The started run, or (engine not ready) the note to save instead; SessionBusy when one is running. A
        request sent early for an answer that does not start is cancelled."""
        started: AnswerRun | ChatNote | None = None
        try:
            started = self._start(session, request)
            return started
        finally:
            if request.early is not None and not isinstance(started, AnswerRun):
                request.early.cancel()

    def _start(self, session: str, request: AnswerRequest) -> AnswerRun | ChatNote:
        if self.runs.running(session):
            raise SessionBusy("an answer is still streaming: stop it first")
        if self._meter is not None and (refusal := self._meter.refusal(request.user)):
            return ChatNote(len(request.chat.conversation.turns) - 1, "refused", refusal)
        endpoint = self._endpoint()
        if endpoint is None:
            return not_ready_note(len(request.chat.conversation.turns) - 1, self._engine_label())
        run = AnswerRun(self._client(endpoint, request.user), request.registry, request.settings, request.options,
                        request.chat.conversation, request.require_approval, early=request.early)
        if not self.runs.begin(session, run):
            raise SessionBusy("an answer is still streaming: stop it first")
        return run.start()

    def answer(self, session: str, request: AnswerRequest) -> Generator[AnswerUpdate, None, None]:
        """Start an answer and follow it through its phases (see AnswerUpdate); SessionBusy comes from the
        first next(). However the consumer leaves (page closed mid-answer), the run is stopped and the
        session freed."""
        started = self.start(session, request)
        if isinstance(started, ChatNote):
            yield AnswerUpdate("done", request.chat.add_notes(started))
            return
        run, live = started, LiveAnswer()
        try:
            yield AnswerUpdate("started", request.chat)
            save_due = time.monotonic() + PARTIAL_SAVE_S
            for batch in run.batches():
                for event in batch:
                    live.feed(event)
                if live.finished is None:
                    so_far = None
                    if time.monotonic() >= save_due:
                        so_far, save_due = live.so_far(request.chat), time.monotonic() + PARTIAL_SAVE_S
                    yield AnswerUpdate("streaming", request.chat, live.steps(), live.awaiting_approval, so_far)
            saved = live.settle(request.chat, self._failure_behind(live))
            # An answer that broke off gets no hit rate: its lookup dumps the engine's recorder, which a hung
            # engine would answer only at the recorder's timeout (the stall error came 17-20 s late).
            looked_up = self._hit_rate is not None and live.finished is not None and live.finished.error is None
            if looked_up:  # the lookup may take a while: show the answer first
                yield AnswerUpdate("answered", saved)
            yield AnswerUpdate("done", self._with_hit_rate(saved, run) if looked_up else saved)
        finally:
            run.stop()  # no-op once finished; when the consumer left early, the engine must see a disconnect
            self.runs.end(session, run)

    def _failure_behind(self, live: LiveAnswer) -> str | WorkerLost | None:
        """The engine's diagnosis when the answer broke off because the engine died, else None."""
        finished = live.finished
        if self._engine_failure is None or finished is None or finished.error is None \
                or finished.error.kind not in DEATH_SIGNS:
            return None
        deadline = time.monotonic() + FAILURE_WAIT_S
        while True:
            try:
                failure = self._engine_failure()
            except Exception:  # an optional diagnosis must never cost the user the answer
                log.exception("engine failure lookup failed")
                return None
            if failure or time.monotonic() >= deadline:
                return failure
            time.sleep(FAILURE_POLL_S)

    def _with_hit_rate(self, saved: SavedChat, run: AnswerRun) -> SavedChat:
        """The saved answer with its GPU hit rate when the expert monitor knows it."""
        rate = self._answer_hit_rate(run)
        if rate is None:
            return saved
        last = len(saved.conversation.turns) - 1
        return saved.add_notes(ChatNote(last, "info", f"GPU expert hit rate {rate:.0%}"))

    def _answer_hit_rate(self, run: AnswerRun) -> float | None:
        if self._hit_rate is None or not run.ended_at:
            return None
        try:
            return self._hit_rate(run.started_at, run.ended_at)
        except Exception:  # an optional remark must never cost the user the answer
            log.exception("per-answer GPU hit rate failed")
            return None
