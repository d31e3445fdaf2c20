"""Which components a listener's progress is tracked on, in the page.

Gradio's page keeps a loading status for every component that was ever a progress target of an event it ran
(the listener's `show_progress_on`, else its outputs), and at every status change of any event (queued, started,
each frame, done) it hands each of those components its status again, snapshotting the component's props as it
goes (Blocks' update_loading_stati_state -> update_state -> get_data: structuredClone). With the chats loaded
and one answer asked that was ~30 ms of the page's main thread per answer (a JS profile of
bench_chat_stream's TTFT runs), in the very window where the answer's first token arrives, which then waited for
it. A listener whose progress is hidden shows it on no component: it gets no targets, so its outputs never join
that set. (An empty `show_progress_on` reaches the page as [], which the page takes as "none"; None means "the
outputs".)
"""

from __future__ import annotations

import gradio as gr


def untrack_hidden_progress(blocks: gr.Blocks) -> None:
    """After every listener of `blocks` is defined: those with hidden progress track it on no component."""
    for fn in blocks.fns.values():
        if fn.show_progress == "hidden" and fn.show_progress_on is None:
            fn.show_progress_on = []
