"""Continue (issue 26): an answer cut short (max tokens, a stop) goes on from where it ended. The engine is sent the
conversation with the cut answer last and `continue_final_message` (docs/ENGINE_CONTRACT.md), what streams is
appended to that answer, and the simulated engine continues its own scripted reply from the text sent."""

from __future__ import annotations

from m3ui.conversation import AssistantTurn, Conversation
from m3ui.conversation.library import ChatLibrary, ChatNote, new_chat
from tests.sse_replay import ReplayServer, answer_reply
from tests.test_ui_chat_handlers import LIBRARY, SETTINGS, SKIP, answer, controller, request

CUT = ChatNote(1, "cut", "The answer was cut off at the max tokens limit. Raise Max tokens and press Regenerate.")


def cut_library() -> ChatLibrary:
    chat = new_chat().with_conversation(Conversation().ask("Count to 9").add(
        AssistantTurn("1, 2, 3, 4,", finish_reason="length"))).add_notes(CUT)
    return ChatLibrary.fresh().put(chat)


def test_continue_sends_the_cut_answer_last_and_appends_what_comes_to_it():
    with ReplayServer([answer_reply(" 5, 6, 7, 8, 9.")]) as server:
        chat = controller(server)
        assert chat.show(cut_library())["continue_answer"]["visible"] is True
        final = answer(chat, chat.continue_answer(cut_library(), *SETTINGS, request()))[-1]
        body = server.requests[0]
    assert body["messages"][-1] == {"role": "assistant", "content": "1, 2, 3, 4,"}
    assert body["continue_final_message"] is True
    assert body["chat_template_kwargs"] == {"thinking_mode": "disabled"}  # the thinking is over
    saved = final[LIBRARY].active
    assert [t.content for t in saved.conversation.turns] == ["Count to 9", "1, 2, 3, 4, 5, 6, 7, 8, 9."]
    assert not [note for note in saved.notes if note.kind == "cut"], "the answer is whole now"
    assert final["continue_answer"]["visible"] is False


def test_continue_is_offered_only_after_an_answer_cut_short():
    stopped = cut_library().active
    stopped = stopped.with_conversation(stopped.conversation, (ChatNote(1, "stopped", "Stopped by you."),))
    assert controller(None).show(ChatLibrary.fresh().put(stopped))["continue_answer"]["visible"] is True
    with ReplayServer([answer_reply("Done.")]) as server:
        chat = controller(server)
        final = answer(chat, chat.send("Hi", ChatLibrary.fresh(), *SETTINGS, request()))[-1]
        assert final["continue_answer"]["visible"] is False
        nothing = answer(chat, chat.continue_answer(final[LIBRARY], *SETTINGS, request()))
        assert server.requests[1:] == [], "nothing to continue: nothing is sent"
    assert all(update[LIBRARY] == SKIP for update in nothing), "and nothing changes"


def test_the_sim_continues_its_scripted_reply_from_the_text_sent():
    from launch.sim.answers import Conversation as SimConversation
    from launch.sim.answers import Turn, plan_reply

    whole = plan_reply(SimConversation((Turn("user", "count to 30"),), (), "auto")).content
    rest = plan_reply(SimConversation((Turn("user", "count to 30"), Turn("assistant", whole[:20])), (), "auto"))
    assert whole[:20] + rest.content == whole and not rest.reasoning
