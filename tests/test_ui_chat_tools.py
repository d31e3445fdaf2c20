"""Tools in an ordinary chat (issue 26's habit), through the Chat tab's handlers against a real HTTP server: with the
chat's switch on, the engine is offered the built-in tools and a call runs and shows with no approval; off, no
`tools` go out; the switch is kept with the chat, refused when it is not a plain true/false, sent early too, and
taken by Regenerate as the form has it."""

from __future__ import annotations

import gradio as gr
import pytest

from m3ui.chat_session import ChatRunner
from m3ui.client import EndpointConfig
from m3ui.conversation.library import ChatLibrary
from m3ui.conversation.turns import ToolTurn
from m3ui.tools import builtin_tools
from m3ui.ui.chat.controller import FORM, ChatController
from tests.sse_replay import ReplayServer, answer_reply, tool_calls_reply
from tests.test_ui_chat_handlers import answer, request

# thinking, temperature, top-p, max tokens, stall limit, keep reasoning, system prompt; then tools, live ticket
FORM_VALUES = ("disabled", 0.6, 0.95, 4096, 60, False, "")
PAGE = "pageTicket-0123456789abcdef"


def controller(server: ReplayServer) -> ChatController:
    endpoint = EndpointConfig(base_url=server.base_url)
    return ChatController(ChatRunner(lambda: endpoint, lambda: "ready"))


def test_a_chat_with_tools_on_offers_the_builtin_tools_and_runs_a_call_with_no_approval():
    replies = [tool_calls_reply(("get_weather", '{"city": "Tokyo"}')), answer_reply("Tokyo: see the forecast.")]
    with ReplayServer(replies) as server:
        chat = controller(server)
        final = answer(chat, chat.send("What's the weather in Tokyo?", ChatLibrary.fresh(), *FORM_VALUES, True, "",
                                       request()))[-1]
        first, second = server.requests
    assert [tool["function"]["name"] for tool in first["tools"]] == [tool.name for tool in builtin_tools()]
    assert second["messages"][-1]["role"] == "tool" and "DEMO DATA" in second["messages"][-1]["content"]
    saved = final["library"].active
    assert any(isinstance(turn, ToolTurn) for turn in saved.conversation.turns)
    assert saved.settings["tools"] is True  # the chat opens with its switch on next time
    shown = final["chatbot"]
    call = next(m for m in shown if (m.metadata or {}).get("title") == "Tool call: get_weather")
    assert '"city": "Tokyo"' in call.content and call.metadata["log"] == "done"
    assert shown[-1].content.startswith("Tokyo: see the forecast.")


def test_a_chat_with_tools_off_sends_no_tools_and_keeps_its_switch_off():
    with ReplayServer([answer_reply("No tools here.")]) as server:
        chat = controller(server)
        final = answer(chat, chat.send("What's the weather in Tokyo?", ChatLibrary.fresh(), *FORM_VALUES, False, "",
                                       request()))[-1]
        body = server.requests[0]
    assert "tools" not in body and "tool_choice" not in body
    library = final["library"]
    assert library.active.settings["tools"] is False
    assert chat.show(library, form=True)["tools"] is False


def test_a_chat_answered_before_the_switch_existed_opens_with_tools_off():
    library = ChatLibrary.fresh()
    old = library.active.with_settings({"thinking_mode": "disabled"})  # a record written before "tools"
    with ReplayServer([]) as server:
        assert controller(server).show(library.put(old), form=True)["tools"] is False


@pytest.mark.parametrize("switch", ["yes", 1, None])
def test_a_tools_switch_that_is_not_true_or_false_is_refused_before_anything_is_sent(switch):
    with ReplayServer([]) as server:
        handler = controller(server).send("hi", ChatLibrary.fresh(), *FORM_VALUES, switch, "", request())
        with pytest.raises(gr.Error, match="tools switch"):
            next(handler)
        assert server.requests == []


def test_the_request_sent_early_carries_the_tools_so_the_answer_takes_it():
    replies = [tool_calls_reply(("get_weather", '{"city": "Tokyo"}')), answer_reply("Tokyo: see above.")]
    with ReplayServer(replies) as server:
        chat = controller(server)
        library = chat.load(None, page=PAGE)["library"]
        form = {"text": "Weather in Tokyo?", **dict(zip(FORM, (*FORM_VALUES, True), strict=True))}
        assert chat.send_early(PAGE, form, None)
        answer(chat, chat.send("Weather in Tokyo?", library, *FORM_VALUES, True, PAGE, request()))
        assert len(server.requests) == 2  # the early request was taken, not cancelled and asked again
        assert server.requests[0]["tools"] and server.requests[1]["messages"][-1]["role"] == "tool"


def test_regenerate_asks_with_the_switch_as_the_form_has_it_now():
    with ReplayServer([answer_reply("Without tools."), answer_reply("With tools.")]) as server:
        chat = controller(server)
        library = answer(chat, chat.send("hi", ChatLibrary.fresh(), *FORM_VALUES, False, "", request()))[-1]["library"]
        final = answer(chat, chat.regenerate(library, *FORM_VALUES, True, "", request()))[-1]
        off, on = server.requests
    assert "tools" not in off and on["tools"]
    assert final["library"].active.settings["tools"] is True
