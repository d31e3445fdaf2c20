"""The Chat tab's attachment handlers without a browser: a question joins its files, over the context it is
held back with what each way out would cut, trimming fits it, and the chat shows documents folded."""

from __future__ import annotations

from pathlib import Path

from m3ui.conversation import Conversation
from m3ui.conversation.library import ChatLibrary, title_from
from m3ui.conversation.turns import AssistantTurn
from m3ui.documents.attachment import DOCUMENT_BLOCK, message_with, refused
from m3ui.documents.reader import read_upload
from m3ui.documents.token_count import TokenCounter
from m3ui.ui.chat.attachments import AttachmentsController, chips_html
from m3ui.ui.chat.folding import HEAD_LINES, MORE_LINES, edited_question, fold_question


class Context:
    def __init__(self, limit: int) -> None:
        self.counter = TokenCounter()
        self.limit = limit

    def prefill_rate(self, prompt_tokens: int) -> None:
        return None


def attach(tmp_path: Path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return read_upload(path, name, TokenCounter())


def library_with_history(turns: int) -> ChatLibrary:
    library = ChatLibrary.fresh()
    conversation = Conversation()
    for i in range(turns):
        conversation = Conversation((*conversation.ask(f"question {i} " + "word " * 100).turns,
                                     AssistantTurn(content="answer " * 100)))
    return library.put(library.active.with_conversation(conversation))


def test_a_question_joins_its_files_and_refused_chips_stay(tmp_path: Path) -> None:
    control = AttachmentsController(Context(1_000_000), browser_kept=True)
    good = attach(tmp_path, "a.py", "print('hi')\n")
    bad = refused("x.bin", 3, "a binary file")
    out = control.prepare("Explain", [good, bad], ChatLibrary.fresh(), "", 100)
    asked, kept, chips, over = out[0], out[1], out[2], out[8]
    assert not over and DOCUMENT_BLOCK.search(asked) and asked.endswith("Explain")
    assert kept == [bad] and "a binary file" in chips and "a.py" not in chips


def test_over_the_context_nothing_is_sent_and_the_choice_says_what_each_way_cuts(tmp_path: Path) -> None:
    library = library_with_history(4)
    control = AttachmentsController(Context(2400), browser_kept=False)
    doc = attach(tmp_path, "big.txt", "lorem ipsum " * 300)
    out = control.prepare("Sum it up", [doc], library, "", 200)
    asked, choice, text, message, over, send = out[0], out[5], out[6], out[7], out[8], out[9]
    assert over and message == "Sum it up" and send["visible"] is True and choice["visible"] is True
    assert asked == {"__type__": "update"}  # the question is not sent: `asked` stays as it was
    assert "Over the context by" in text and "big.txt" in text
    with_trim = control.trim_file("Sum it up", [doc], library, "", 200)
    trimmed = with_trim[0][0]
    assert trimmed.tokens.tokens < doc.tokens.tokens and "trimmed" in trimmed.note
    assert control.prepare("Sum it up", [trimmed], library, "", 200)[8] is False
    dropped = control.drop_oldest("Sum it up", [doc], library, "", 200)[0]
    assert len(dropped.active.conversation.turns) < len(library.active.conversation.turns)


def test_documents_and_long_pastes_show_folded_and_titles_come_from_the_typed_text(tmp_path: Path) -> None:
    lines = "\n".join(f"row {i}" for i in range(1000))
    doc = attach(tmp_path, "rows.csv", lines)
    shown = fold_question(message_with("Count the rows", [doc]))
    assert "rows.csv" in shown and "row 0" in shown and "Show 200 more lines" in shown
    assert f"row {HEAD_LINES + MORE_LINES - 1}" in shown and f"row {HEAD_LINES + MORE_LINES}" not in shown
    assert shown.endswith("Count the rows") and "1,000 lines" in shown
    pasted = fold_question(lines)
    assert "Show 200 more lines" in pasted and "row 999" not in pasted
    assert fold_question("short") == "short"
    assert title_from(message_with("Count the rows", [doc])) == "Count the rows"
    assert title_from(message_with("", [doc])) == "rows.csv"


def test_a_chip_kept_in_the_browser_carries_its_size_for_the_page_to_check(tmp_path: Path) -> None:
    doc = attach(tmp_path, "huge.txt", "x" * 2_000_001)  # the page weighs it against its storage (attach.js)
    assert 'data-keep-chars="2000001"' in chips_html([doc], browser_kept=True)
    assert "data-keep-chars" not in chips_html([doc], browser_kept=False)  # an account's chats are the server's


def test_editing_a_question_keeps_its_documents_whole(tmp_path: Path) -> None:
    doc = attach(tmp_path, "rows.csv", "\n".join(f"row {i}" for i in range(1000)))
    original = message_with("Count the rows", [doc])
    shown = fold_question(original)
    edited = edited_question(original, shown.replace("Count the rows", "Sum the rows"))
    assert edited == message_with("Sum the rows", [doc]) and "row 999" in edited
    assert edited_question("plain question", "new words") == "new words"
