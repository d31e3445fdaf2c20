"""What the simulated model generates for a request: the scripted reply as M3's raw text, then the request's
constraint (structured output), `ignore_eos` and stopping conditions applied to it, token by token."""

from __future__ import annotations

from dataclasses import dataclass

from launch.sim.answers import Conversation, plan_reply
from launch.sim.logprobs import EOS_TEXT
from launch.sim.m3_text import Reply, ThinkStyle, render_raw
from launch.sim.request import ChatRequest, has_earlier_assistant_turn
from launch.sim.scheduler import EOS_FINISH, Finish
from launch.sim.stopping import run_on, stop_cut
from launch.sim.structured_output import constrained_text, request_constraint
from launch.sim.tokens import THINK_END, THINK_START, tokenize

UNBOUNDED_NEW_TOKENS = 1 << 30  # scheduler.init_req_max_new_tokens: no max_tokens means up to the context


@dataclass(frozen=True)
class Output:
    pieces: tuple[str, ...]  # each generated token's text as it reaches the client
    tokens: tuple[str, ...]  # each generated token's own text (the logprobs' tokens), the end of turn included
    end: Finish | None  # how it ends when max_new_tokens leaves room (scheduler.Job.end)


def think_style(request: ChatRequest, reply: Reply, constrained: bool = False) -> ThinkStyle:
    mode = request.thinking_mode
    if mode == "enabled":
        return "prefilled"
    if mode == "disabled" or reply.json_calls or constrained:  # a constrained output leaves no room for thinking
        return "none"
    if "thinking_mode" not in (request.chat_template_kwargs or {}) and has_earlier_assistant_turn(request):
        return "stray_close"  # M3's reported multi-turn failure when the mode is not sent every turn
    return "self"


def raw_output(request: ChatRequest, reply: Reply, constrained: bool = False) -> str:
    raw = render_raw(reply, think_style(request, reply, constrained))
    tools_on = bool(request.tools) and request.choice_mode != "none"
    if request.skip_special_tokens and not tools_on:
        # The detokenizer drops special tokens unless told not to (sglang keeps them when tools are on).
        raw = raw.replace(THINK_START, "").replace(THINK_END, "")
    return raw


def plan_output(request: ChatRequest, conversation: Conversation, room: int) -> Output:
    """`room`: the most tokens the scheduler lets this request generate (its context left)."""
    reply = plan_reply(conversation)
    constraint = request_constraint(request)
    if constraint is not None:
        reply = Reply(reply.reasoning, constrained_text(constraint, reply.content), thinks=False)
    tokens = tuple(tokenize(raw_output(request, reply, constraint is not None)))
    end: Finish | None = EOS_FINISH
    if request.ignore_eos:
        tokens = run_on(tokens, min(request.max_new_tokens or UNBOUNDED_NEW_TOKENS, room))
        end = None
    cut = stop_cut(tokens, request.stop, request.stop_regex, request.no_stop_trim)
    if cut is not None:
        return Output(cut.pieces, cut.generated, Finish("stop", cut.matched))
    return Output(tokens, (*tokens, EOS_TEXT) if end else tokens, end)
