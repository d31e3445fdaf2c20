"""The Tools tab's handlers against a real HTTP server: each call shown with its arguments and result, results
sent back, approval through Approve/Deny clicks (separate requests), tool settings checked before sending."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import fields, replace

import gradio as gr
import pytest

from m3ui.access import AccessPolicy
from m3ui.accounts import AccountStore
from m3ui.accounts.server_chats import ServerChats
from m3ui.chat_session import EXAMPLE_CUSTOM_TOOL, CallView, ChatRunner
from m3ui.client import EndpointConfig
from m3ui.conversation import Conversation, ToolTurn
from m3ui.conversation.library import chat_record, new_chat
from m3ui.services import AppServices
from m3ui.tools import builtin_tools
from m3ui.ui.tools.controller import BUSY_HINT, UNCHANGED, ToolsController
from m3ui.ui.tools.keeping import BrowserKeeper, Kept, ServerKeeper, ToolChatKeeper, new_tool_chat
from m3ui.ui.tools.layout import MESSAGE_HINT, ToolsTabUI, build_layout
from m3ui.ui.tools.view import build_tools_tab
from tests.sse_replay import ReplayServer, answer_reply, tool_calls_reply

NAMES = [tool.name for tool in builtin_tools()]


with gr.Blocks():
    UI: ToolsTabUI = build_layout(new_tool_chat())
CHATBOT, CHAT, APPROVAL, APPROVAL_TEXT = UI.chatbot, UI.chat, UI.approval, UI.approval_text


def controller(server: ReplayServer, keeper: ToolChatKeeper | None = None) -> ToolsController:
    endpoint = EndpointConfig(base_url=server.base_url)
    return ToolsController(ChatRunner(lambda: endpoint, lambda: "ready"), UI, keeper or BrowserKeeper())


def regenerate(tools: ToolsController, chat):
    return tools.regenerate(chat, (), NAMES, "auto", "adaptive", False, 5, 10, 60, gr.Request(session_hash="page-1"))


def send(tools: ToolsController, text: str, choice: str = "auto", approval: bool = False, specs=(), names=NAMES):
    return tools.send(text, new_chat(), specs, names, choice, "adaptive", approval, 5, 10, 60,
                      gr.Request(session_hash="page-1"))


def test_a_weather_call_shows_its_arguments_and_result_and_the_answer_uses_it():
    slow_call = replace(tool_calls_reply(("get_weather", '{"city": "Paris"}')), delay_s=0.04)  # seen pending
    replies = [slow_call, answer_reply("Paris: see above.")]
    with ReplayServer(replies) as server:
        updates = list(send(controller(server), "Weather in Paris?"))
        second = server.requests[1]["messages"]
    final = updates[-1]
    messages = final[CHATBOT]
    call = next(m for m in messages if m.metadata.get("title") == "Tool call: get_weather")
    result = next(m for m in messages if m.metadata.get("parent_id") == call.metadata["id"])
    assert '"city": "Paris"' in call.content and call.metadata["log"] == "done"
    assert "DEMO DATA" in result.content and messages[-1].content.startswith("Paris: see above.")
    assert second[-1]["role"] == "tool" and second[-1]["content"].startswith("DEMO DATA")
    assert any(isinstance(t, ToolTurn) for t in final[CHAT].conversation.turns)
    pending = [m for u in updates[1:-1] if CHATBOT in u for m in u[CHATBOT]
               if m.metadata.get("title") == "Tool call: get_weather"]
    assert pending and pending[0].metadata.get("status") == "pending"


def test_approve_and_deny_clicks_resolve_the_paused_call():
    replies = [tool_calls_reply(("get_weather", '{"city": "Oslo"}'), ("calculator", '{"expression": "2**10"}')),
               answer_reply("done")]
    with ReplayServer(replies) as server:
        tools = controller(server)
        decisions = iter([tools.approve, tools.deny])
        prompts = []
        for update in send(tools, "Oslo weather and 2**10", approval=True):
            if update.get(APPROVAL, {}).get("visible"):
                prompts.append(update[APPROVAL_TEXT])
                logs = {m.metadata["title"]: m.metadata.get("log") for m in update[CHATBOT] if m.metadata}
                if len(prompts) == 1:
                    asked = next(m for m in update[CHATBOT] if m.metadata.get("title") == "Tool call: get_weather")
                    assert '"city": "Oslo"' in asked.content  # the arguments are shown once: in the chat
                    assert logs["Tool call: get_weather"] == "waiting for your approval"
                    assert logs["Tool call: calculator"] == "queued"
                hidden = next(decisions)(gr.Request(session_hash="page-1"))
                assert hidden["visible"] is False
            final = update
    assert "Run `get_weather`?" in prompts[0] and "Oslo" not in prompts[0]
    assert "Run `calculator`?" in prompts[1]
    results = {t.result.name: t.result for t in final[CHAT].conversation.turns if isinstance(t, ToolTurn)}
    assert not results["get_weather"].is_error
    assert results["calculator"].is_error and "denied by user" in results["calculator"].content


def test_a_forced_tool_that_is_not_selected_is_refused_before_sending_and_changes_nothing():
    with ReplayServer([]) as server, pytest.warns(UserWarning, match="names no selected tool"):
        assert list(send(controller(server), "hi", choice="tool:calculator", names=["get_weather"])) == [UNCHANGED]
        assert server.requests == []


def test_a_bad_stall_limit_is_refused_before_sending_and_changes_nothing():
    with ReplayServer([]) as server, pytest.warns(UserWarning, match=r"stall_seconds must be in \[1, 3600\]"):
        updates = list(controller(server).send("hi", new_chat(), (), NAMES, "auto", "adaptive", False, 5, 10, 0,
                                               gr.Request(session_hash="page-1")))
        assert updates == [UNCHANGED] and server.requests == []


@pytest.mark.parametrize(("selected", "choice", "max_steps", "expected"), [
    (NAMES, "auto", "lots", "Fix the tool settings"),  # the listeners take the values unprocessed
    (NAMES, "auto", None, "Fix the tool settings"),
    (None, "required", 5, "needs at least one selected tool"),  # no list of tools: none selected
    (NAMES, 7, 5, "names no selected tool"),
])
def test_raw_values_that_make_no_setting_are_refused_before_sending(selected, choice, max_steps, expected):
    with ReplayServer([]) as server, pytest.warns(UserWarning, match=expected):
        updates = list(controller(server).send("hi", new_chat(), (), selected, choice, "adaptive", False, max_steps, 10,
                                               60, gr.Request(session_hash="page-1")))
        assert updates == [UNCHANGED] and server.requests == []


def test_a_message_that_is_no_text_is_an_empty_one():
    with ReplayServer([]) as server, pytest.warns(UserWarning, match="Type a message first"):
        assert list(send(controller(server), None)) == [UNCHANGED]  # type: ignore[arg-type]
        assert server.requests == []


def test_an_empty_message_or_an_empty_chat_to_regenerate_changes_nothing():
    with ReplayServer([]) as server:
        tools = controller(server)
        with pytest.warns(UserWarning, match="Type a message first"):
            assert list(send(tools, "  \n ")) == [UNCHANGED]
        with pytest.warns(UserWarning, match="Nothing to regenerate yet"):
            assert list(regenerate(tools, new_chat())) == [UNCHANGED]
        assert server.requests == []


def test_regenerate_asks_the_last_question_again_and_replaces_its_answer_and_tool_calls():
    replies = [tool_calls_reply(("get_weather", '{"city": "Paris"}')), answer_reply("First answer."),
               tool_calls_reply(("get_weather", '{"city": "Paris"}')), answer_reply("Second answer.")]
    with ReplayServer(replies) as server:
        tools = controller(server)
        first = list(send(tools, "Weather in Paris?"))[-1][CHAT]
        final = list(regenerate(tools, first))[-1]
        asked_again = server.requests[2]["messages"]
    assert [m["role"] for m in asked_again] == ["user"] and asked_again[0]["content"] == "Weather in Paris?"
    turns = final[CHAT].conversation.turns
    assert sum(isinstance(t, ToolTurn) for t in turns) == 1
    contents = [m.content for m in final[CHATBOT]]
    assert contents[-1].startswith("Second answer.") and not any("First answer." in c for c in contents)


def test_a_custom_tool_is_offered_and_can_be_forced():
    with ReplayServer([tool_calls_reply(("lookup_order", '{"order_id": "A-1"}')), answer_reply("Shipped.")]) as server:
        tools = controller(server)
        added = tools.add_tool((), NAMES, "auto", EXAMPLE_CUSTOM_TOOL)
        specs, picker, choice, schemas, removable, status = (added[block] for block in UI.editor)
        assert status.startswith("✓ Added `lookup_order`")
        assert "lookup_order" in picker["value"]
        assert ("force lookup_order", "tool:lookup_order") in choice["choices"]
        assert '"name": "lookup_order"' in schemas and removable["choices"] == ["lookup_order"]
        final = list(send(tools, "Where is order A-1?", choice="tool:lookup_order", specs=specs,
                          names=picker["value"]))[-1]
        body = server.requests[0]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "lookup_order"}}
    (turn,) = [t for t in final[CHAT].conversation.turns if isinstance(t, ToolTurn)]
    assert turn.result.content.startswith("Order A-1: shipped")


def test_a_broken_custom_tool_says_what_is_wrong_and_changes_nothing():
    with ReplayServer([]) as server:
        shown = controller(server).add_tool((), NAMES, "auto", '{"name": "x"}')
    assert list(shown) == [UI.custom_status] and shown[UI.custom_status].startswith("⚠ tool definition lacks")


@pytest.mark.parametrize(("parameters", "reason"), [
    ({"type": "object", "properties": {"n": {"type": "int"}}},
     "'int' is not valid under any of the given schemas (at parameters['properties']['n']['type'])"),
    ({"type": "object", "properties": {"city": {"type": "string", "required": True}}},
     "True is not of type 'array' (at parameters['properties']['city']['required'])"),
])
def test_a_custom_tool_the_engine_would_refuse_is_refused_with_the_engines_reason(parameters, reason):
    # sglang-kt fails every chat that offers such a tool (serving_chat._validate_request, Draft 2020-12).
    definition = json.dumps({"name": "t", "parameters": parameters, "result_template": "x"})
    with ReplayServer([]) as server:
        shown = controller(server).add_tool((), NAMES, "auto", definition)
    assert list(shown) == [UI.custom_status]
    expected = f"⚠ the engine refuses this parameters schema (JSON Schema Draft 2020-12): {reason}"
    assert shown[UI.custom_status] == expected


def test_stop_ends_a_tool_answer():
    replies = [tool_calls_reply(("get_weather", '{"city": "Rome"}'))]
    with ReplayServer(replies) as server:
        tools = controller(server)
        updates = send(tools, "Rome weather", approval=True)
        for update in updates:
            if update.get(APPROVAL, {}).get("visible"):
                threading.Thread(target=tools.stop, args=(gr.Request(session_hash="page-1"),)).start()
                break
        final = list(updates)[-1]
    assert final[CHATBOT][-1].content.startswith("■ **Stopped**")


def test_bad_calls_become_error_results_and_the_loop_goes_on_to_an_answer():
    replies = [tool_calls_reply(("launch_rockets", '{"count": 3}'), ("calculator", '{"expression": '),
                                ("get_weather", '{"city": 7}')),
               answer_reply("Sorry, those failed.")]
    with ReplayServer(replies) as server:
        final = list(send(controller(server), "Do risky things"))[-1]
        results = [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert "unknown tool 'launch_rockets'" in results[0]
    assert "not valid JSON" in results[1] and "invalid arguments for get_weather" in results[2]
    blocks = [m for m in final[CHATBOT] if m.metadata.get("title", "").startswith("Tool call")]
    assert [b.metadata["log"] for b in blocks] == ["error", "error", "error"]
    assert final[CHATBOT][-1].content.startswith("Sorry, those failed.")


def test_the_stall_limit_set_in_the_tab_gives_up_on_a_silent_engine():
    silent = replace(answer_reply("Too late."), delay_s=3.0)  # each chunk after 3 s of silence
    with ReplayServer([silent]) as server:
        started = time.monotonic()
        final = list(controller(server).send("hi", new_chat(), (), NAMES, "auto", "adaptive", False, 5, 10, 1,
                                             gr.Request(session_hash="page-1")))[-1]
        waited = time.monotonic() - started
    shown = final[CHATBOT][-1].content
    assert "1 s (the stall limit)" in shown and "Too late." not in shown
    assert waited < 3.0


def test_each_value_is_keyed_by_the_component_it_is_for():
    """A full update names every component of the view and gives each its own value: placed by component, a
    reordered output list cannot move one onto another (positional tuples did so silently)."""
    chat = new_tool_chat().with_conversation(Conversation().ask("hi"))
    with ReplayServer([]) as server:
        tools = controller(server)
        idle = tools.show(Kept(chat, "the browser's record"))
        busy = tools.show(Kept(chat, gr.skip()), busy=True, message="",
                          awaiting=CallView("c1", "get_weather", "{}", "pending"))
    assert set(idle) == set(UI.view) - {UI.approval_text} and set(busy) == set(UI.view)
    assert idle[UI.chat] is chat and idle[UI.saved] == "the browser's record"
    assert [m.content for m in idle[UI.chatbot]] == ["hi"]
    assert (idle[UI.send]["visible"], idle[UI.stop]["visible"], idle[UI.regenerate]["interactive"],
            idle[UI.clear]["interactive"], idle[UI.approval]["visible"]) == (True, False, True, True, False)
    assert (busy[UI.send]["visible"], busy[UI.stop]["visible"], busy[UI.regenerate]["interactive"],
            busy[UI.clear]["interactive"], busy[UI.approval]["visible"]) == (False, True, False, False, True)
    assert idle[UI.message]["placeholder"] == MESSAGE_HINT and busy[UI.message] == gr.update(value="",
                                                                                            placeholder=BUSY_HINT)
    assert busy[UI.approval_text].startswith("**Run `get_weather`?**") and busy[UI.saved] == gr.skip()


def names(ui: ToolsTabUI, blocks) -> set[str]:
    """The ToolsTabUI field names of `blocks` (components of `ui`)."""
    by_id = {getattr(ui, field.name)._id: field.name for field in fields(ui)}
    return {by_id[block._id] for block in blocks}


def test_every_handler_sets_only_outputs_of_its_own_listener(tmp_path):
    """Each handler's keys are among the outputs its listener declares in the real tab (Gradio refuses a value
    for any other component, at the moment it arrives)."""
    services = AppServices.create(tmp_path, AccessPolicy.from_env("127.0.0.1", None))
    try:
        with gr.Blocks() as demo:
            tab = build_tools_tab(services, demo)
    finally:
        services.close()
    listeners = {fn.fn.__name__: names(tab, fn.outputs) for fn in demo.fns.values()
                 if isinstance(getattr(fn.fn, "__self__", None), ToolsController)}
    request = gr.Request(session_hash="page-1")
    with ReplayServer([tool_calls_reply(("get_weather", '{"city": "Oslo"}')), answer_reply("Oslo: see above."),
                       answer_reply("Again.")]) as server:
        tools = controller(server)
        sent = list(tools.send("Oslo?", new_tool_chat(), (), NAMES, "auto", "adaptive", False, 5, 10, 60, request))
        regenerated = list(tools.regenerate(sent[-1][CHAT], (), NAMES, "auto", "adaptive", False, 5, 10, 60,
                                            request))
        set_by = {"send": sent, "regenerate": regenerated, "clear": [tools.clear(sent[-1][CHAT], request)],
                  "load": [tools.load({"user": "", "chat": chat_record(sent[-1][CHAT])}, request)],
                  "tools_changed": [tools.tools_changed((), NAMES[:1], "auto")],
                  "add_tool": [tools.add_tool((), NAMES, "auto", EXAMPLE_CUSTOM_TOOL),
                               tools.add_tool((), NAMES, "auto", "{}")],
                  "remove_tool": [tools.remove_tool((), NAMES, "auto", "lookup_order")]}
    assert set(set_by) <= set(listeners)
    for name, updates in set_by.items():
        assert len(updates) > 1 or updates[0] != UNCHANGED, name
        for update in updates:
            assert names(UI, update) <= listeners[name], name
    assert names(UI, sent[-1]) == names(tab, tab.view) - {"approval_text"}
    assert sent[-1][CHATBOT][-1].content.startswith("Oslo")


SLOW_ANSWER = replace(answer_reply("One two three four."), delay_s=0.3)  # streams for over PARTIAL_SAVE_S


def test_an_answer_is_kept_as_it_streams_so_a_killed_app_keeps_what_arrived():
    with ReplayServer([SLOW_ANSWER]) as server:
        updates = list(send(controller(server), "Count slowly"))
    partial = [update for update in updates[1:-1] if UI.saved in update]
    assert partial, "nothing was kept while the answer streamed"
    kept = BrowserKeeper().restored(partial[0][UI.saved], None)
    assert kept == partial[0][UI.chat] and kept.notes[-1].kind == "cut"
    assert kept.conversation.turns[-1].content.startswith("One")
    final = BrowserKeeper().restored(updates[-1][UI.saved], None)
    assert final.conversation.turns[-1].content == "One two three four." and not final.notes


def test_on_the_server_the_question_the_answer_so_far_and_the_answer_are_one_chat(tmp_path):
    """Each keep is made from the version the one before stored: none of them is taken for another device's."""
    store = AccountStore.open(tmp_path / "data")
    store.add("bob", "bobs-password")
    chats = ServerChats(store)
    try:
        with ReplayServer([SLOW_ANSWER]) as server:
            tools = controller(server, ServerKeeper(chats))
            updates = list(tools.send("Count slowly", new_tool_chat(), (), NAMES, "auto", "adaptive", False, 5, 10,
                                      60, gr.Request(username="bob", session_hash="page-1")))
        assert any(UI.chat in update for update in updates[1:-1])  # kept while it streamed
        (record,) = chats.export("bob")
        assert record["id"] == "tools" and record["conversation"]["turns"][-1]["content"] == "One two three four."
        assert updates[-1][UI.chat].id == "tools" and updates[-1][UI.saved] == gr.skip()
    finally:
        store.close()
