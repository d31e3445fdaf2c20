"""Chats saved by m3ui before it stored one record per chat: the whole library in one Gradio BrowserState value
(key "m3ui-chats-v1", obfuscated with a key kept in the data folder). A page reads it once, and its chats are
written as records, so an upgrade loses none (the page script then marks the browser as migrated)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from m3ui.conversation.library import MAX_CHATS, SavedChat, chat_from_record

LEGACY_STORAGE_KEY = "m3ui-chats-v1"
LEGACY_VERSION = 1
SECRET_FILE = "browser_state.key"


def legacy_secret(data_dir: Path) -> str | None:
    """The key the old value was obfuscated with; None when this data folder never had one (nothing to read)."""
    try:
        return (data_dir / SECRET_FILE).read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def legacy_chats(state: object) -> list[SavedChat]:
    """The readable chats of an old library value (untrusted: anything else is skipped)."""
    if not isinstance(state, Mapping) or state.get("version") != LEGACY_VERSION:
        return []
    records = state.get("chats")
    chats = (chat_from_record({**record, "v": 1, "hash": ""}) for record in records[:MAX_CHATS]
             if isinstance(record, Mapping)) if isinstance(records, list) else ()
    return [chat for chat in chats if chat is not None and chat.conversation.turns]
