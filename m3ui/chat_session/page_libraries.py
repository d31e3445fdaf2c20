"""The library each open page was last shown, by the page's live ticket (ChatLibrary.page): what a click on Send
will ask from, known before Gradio delivers the click (m3ui.live.early_ask). A guess only: the answer's own
request is compared with the one sent early, whole, before it is used (m3ui.client.early_request)."""

from __future__ import annotations

import threading
from collections import OrderedDict

from m3ui.conversation_store import ChatLibrary

MAX_PAGES = 1024  # pages remembered (the least recently shown is forgotten: its next Send is not sent early)


class PageLibraries:
    def __init__(self, limit: int = MAX_PAGES) -> None:
        self._shown: OrderedDict[str, ChatLibrary] = OrderedDict()
        self._lock = threading.Lock()
        self._limit = limit

    def shown(self, library: ChatLibrary) -> None:
        """`library` is what its page shows now (a library of no page is not kept)."""
        if not library.page:
            return
        with self._lock:
            self._shown[library.page] = library
            self._shown.move_to_end(library.page)
            while len(self._shown) > self._limit:
                self._shown.popitem(last=False)

    def get(self, page: str) -> ChatLibrary | None:
        with self._lock:
            return self._shown.get(page)
