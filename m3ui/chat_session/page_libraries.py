"""The library each open page was last shown, by the page's live ticket (ChatLibrary.page): what a click on Send
will ask from, known before Gradio delivers the click (m3ui.live.early_ask). A guess only: the answer's own
request is compared with the one sent early, whole, before it is used (m3ui.client.early_request).

Held weakly: a page's library lives in its Gradio session (a State) and goes with it, so this keeps no chat of a
page that is gone, however many pages came and went."""

from __future__ import annotations

import threading
import weakref

from m3ui.conversation.library import ChatLibrary


class PageLibraries:
    def __init__(self) -> None:
        self._shown: weakref.WeakValueDictionary[str, ChatLibrary] = weakref.WeakValueDictionary()
        self._lock = threading.Lock()

    def shown(self, library: ChatLibrary) -> None:
        """`library` is what its page shows now (a library of no page is not kept)."""
        if library.page:
            with self._lock:
                self._shown[library.page] = library

    def get(self, page: str) -> ChatLibrary | None:
        with self._lock:
            return self._shown.get(page)

    def __len__(self) -> int:
        with self._lock:
            return len(self._shown)
