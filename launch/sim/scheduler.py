"""The simulated scheduler: admission, prefill, decode, and the bookkeeping the real one reports.

Requests beyond --max-running-requests (or beyond the KV pool) wait in a queue. Prefill runs in chunks of
--chunked-prefill-size and reuses the longest prompt prefix seen recently (the radix cache). Every forward
pass is routed through the MoE layers by the routing model and handed to the expert recorder; each
decode step's time follows from where its activations landed. A request whose consumer goes away (the
client hung up) stops at its next token and counts as aborted. Log lines follow scheduler_metrics_mixin.py.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Literal

from launch.sim.logs import EngineLog
from launch.sim.metrics import EngineMetrics
from launch.sim.pacing import Pacing
from launch.sim.plan import ServingPlan
from launch.sim.recorder import Recorder
from launch.sim.routing import RoutingModel

EOS_TOKEN_ID = 200020  # MiniMax-M3's end of turn: the matched_stop of a natural finish
DECODE_LOG_INTERVAL = 40  # ServerArgs.decode_log_interval
PREFIX_CACHE_ENTRIES = 64
UNTHROTTLED_PASS_TOKENS = 32  # without pacing, route decode tokens in groups to keep the CPU cost low


class AbortedInQueue(Exception):
    """A request POST /abort_request named while it waited: its stream is cut (see Scheduler.abort)."""


@dataclass(frozen=True)
class Finish:
    kind: Literal["stop", "length", "abort"]
    matched: int | str | None = None  # the EOS token id, or the stop string / regex that matched
    message: str | None = None  # why the scheduler aborted (an input longer than the KV pool)


@dataclass(frozen=True)
class Step:
    """One increment of output; the last one carries the finish reason."""

    text: str
    completion_tokens: int
    finish: Finish | None = None


EOS_FINISH = Finish("stop", EOS_TOKEN_ID)


@dataclass(frozen=True)
class Job:
    rid: str
    topic: str
    prompt: tuple[str, ...]  # prompt tokens (for the prefix cache)
    output: tuple[str, ...]  # the text of each token the model will produce
    max_new_tokens: int | None
    # How the output ends when max_new_tokens leaves room for it: the EOS token (one token more), a stop
    # string or regex matched by its last token, or never by itself (None: ignore_eos).
    end: Finish | None = EOS_FINISH


def _common_prefix(a: Sequence[str], b: Sequence[str]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class Scheduler:
    def __init__(self, plan: ServingPlan, pacing: Pacing, routing: RoutingModel, recorder: Recorder | None,
                 metrics: EngineMetrics, log: EngineLog) -> None:
        self._plan, self._pacing, self._routing, self._recorder = plan, pacing, routing, recorder
        self._metrics, self._log = metrics, log
        self._freed = asyncio.Event()
        self._recent_prompts: deque[tuple[str, ...]] = deque(maxlen=PREFIX_CACHE_ENTRIES)
        self._decode_steps = 0
        self._running: set[str] = set()  # rids of requests admitted or waiting (tokenizer_manager.rid_to_state)
        self._aborting: set[str] = set()  # rids POST /abort_request named, dropped at their next step

    def abort(self, rid: str) -> None:
        """POST /abort_request {"rid"}: an unknown rid is ignored (tokenizer_manager.abort_request). A queued
        request is dropped at once, its stream cut without a finish or usage chunk (0.7.2's
        _handle_abort_req leaves out prompt_tokens, and serving_chat's stream dies on the KeyError); a running one
        runs one more decode pass, then finishes with `abort` (scheduler.abort_request's to_finish), and its
        stream still ends with the finish chunk and the usage chunk."""
        if rid in self._running:
            self._aborting.add(rid)
            self._freed.set()  # a queued one is dropped at once (scheduler.abort_request pops the waiting queue)

    def _forward(self, job: Job, tokens: int) -> float:
        """Route one forward pass and record it; returns its decode step time relative to an all-GPU step."""
        batch = self._routing.route(job.topic, tokens, job.rid)
        if self._recorder is not None:
            self._recorder.record_pass(batch.counts)
        return batch.step_time

    def _fits(self, tokens: int) -> bool:
        m = self._metrics
        return m.running < self._plan.max_running_requests and m.used_tokens + tokens <= self._plan.max_total_num_tokens

    async def _admit(self, tokens: int, rid: str) -> None:
        self._metrics.waiting += 1
        try:
            while rid not in self._aborting:
                if self._fits(tokens):
                    break
                self._freed.clear()
                await self._freed.wait()
            else:
                raise AbortedInQueue(rid)
        finally:
            self._metrics.waiting -= 1
        self._metrics.running += 1
        self._metrics.used_tokens += tokens

    def _release(self, tokens: int) -> None:
        self._metrics.running -= 1
        self._metrics.used_tokens -= tokens
        self._freed.set()

    def _cached_prefix(self, prompt: tuple[str, ...]) -> int:
        cached = max((_common_prefix(prompt, p) for p in self._recent_prompts), default=0)
        self._recent_prompts.append(prompt)
        return min(cached, len(prompt) - 1)

    async def _prefill(self, job: Job) -> tuple[int, float]:
        """Returns the cached prompt tokens and the simulated prefill seconds."""
        cached = self._cached_prefix(job.prompt)
        new = len(job.prompt) - cached
        chunk = max(1, self._plan.chunked_prefill_size)
        seconds = self._pacing.prefill_seconds(new, len(job.prompt))
        for start in range(0, new, chunk):
            self._forward(job, min(chunk, new - start))
        if self._pacing.throttled:
            await asyncio.sleep(seconds)
        snap = self._metrics.snapshot()
        self._log.info(
            f"Prefill batch, #new-seq: 1, #new-token: {new}, #cached-token: {cached}, token usage: "
            f"{snap.token_usage:.2f}, #running-req: {snap.running - 1}, #queue-req: {snap.waiting}, "
            f"input throughput (token/s): {new / seconds if seconds else 0.0:.2f}, cuda graph: False", rank=0)
        return cached, seconds

    def _log_decode(self) -> None:
        self._decode_steps += 1
        if self._decode_steps % DECODE_LOG_INTERVAL:
            return
        snap = self._metrics.snapshot()
        self._log.info(
            f"Decode batch, #running-req: {snap.running}, #token: {snap.used_tokens}, token usage: "
            f"{snap.token_usage:.2f}, cuda graph: True, gen throughput (token/s): {snap.gen_throughput:.2f}, "
            f"#queue-req: {snap.waiting}", rank=0)

    def _too_long(self, job: Job) -> str | None:
        limit = self._plan.max_req_input_len
        if len(job.prompt) < limit:
            return None
        message = (f"Input length ({len(job.prompt)} tokens) exceeds the maximum allowed length ({limit} tokens). "
                   "Use a shorter input or enable --allow-auto-truncate.")
        self._log.error(f"{message}, self.rid='{job.rid}'", rank=0)
        return message

    async def generate(self, job: Job) -> AsyncIterator[Step]:
        """The request's output, token by token; abandoning the iterator aborts the request."""
        too_long = self._too_long(job)
        if too_long is not None:
            yield Step("", 0, Finish("abort", message=too_long))
            return
        received = time.monotonic()
        budget = len(job.prompt) + len(job.output)
        self._running.add(job.rid)
        try:
            await self._admit(budget, job.rid)
        except BaseException as exc:
            self._running.discard(job.rid)
            self._aborting.discard(job.rid)
            if isinstance(exc, AbortedInQueue):
                self._metrics.finished(time.monotonic() - received, aborted=True)
            raise
        finished = False
        try:
            queued = time.monotonic() - received
            cached, prefill_seconds = await self._prefill(job)
            # Unthrottled, nothing waits: the metrics report the simulated time instead of the (zero) wall time.
            ttft = time.monotonic() - received if self._pacing.throttled else queued + prefill_seconds
            self._metrics.prefilled(len(job.prompt), cached, queued, ttft)
            # The model ends its turn with an EOS token, which needs room under max_new_tokens like any other;
            # a stop match ends it unless its token reached max_new_tokens (check_finished tests length first).
            ends = job.end is not None and (job.max_new_tokens is None or job.max_new_tokens > len(job.output))
            limit = len(job.output) if ends or job.max_new_tokens is None else min(job.max_new_tokens,
                                                                                   len(job.output))
            end_tokens = 1 if job.end == EOS_FINISH else 0
            pass_tokens = 1 if self._pacing.throttled else UNTHROTTLED_PASS_TOKENS
            step_time = 1.0
            # Paced to a deadline, not by sleeping after the per-token work: the work then does not slow the
            # configured rate (it did, by ~2 ms a token, capping the sim near 550 tok/s).
            due = time.monotonic()
            for i in range(limit):
                if i % pass_tokens == 0:
                    step_time = self._forward(job, min(pass_tokens, limit - i))
                seconds = self._pacing.decode_seconds(step_time, self._metrics.running)
                due += seconds if self._pacing.throttled else 0.0
                delay = due - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                elif i % pass_tokens == 0:
                    await asyncio.sleep(0)  # let other requests and the HTTP server run
                self._metrics.decoded(1, seconds)
                self._log_decode()
                finished = i == limit - 1
                if job.rid in self._aborting:  # counted as aborted (num_aborted_requests_total)
                    finished = False
                    yield Step(job.output[i], i + 1, Finish("abort"))
                    break
                if not finished:
                    yield Step(job.output[i], i + 1)
                elif ends and job.end is not None:
                    yield Step(job.output[i], i + 1 + end_tokens, job.end)
                else:
                    yield Step(job.output[i], i + 1, Finish("length"))
            if limit == 0:
                finished = True
                yield Step("", end_tokens, job.end) if ends and job.end else Step("", 0, Finish("length"))
        finally:
            self._running.discard(job.rid)
            self._aborting.discard(job.rid)
            self._release(budget)
            self._metrics.finished(time.monotonic() - received, aborted=not finished)
