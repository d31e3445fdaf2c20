"""Gradio's per-session copy of the page's configuration, built for the components a session really touches.

Gradio creates a SessionState at a session's first queued event (each page load, each API client) and builds
in it the configuration of every component of the app: for each one an `inspect.signature` of its constructor
and a walk of its properties, about 60 ms for this app's few hundred components. Measured with 16 new sessions
answering at once (benchmarks/bench_chat_stream.py), that was 38% of the event loop's CPU. Gradio itself fills
an entry on demand when one is missing (`_update_value_in_config`), and the one reader of the whole copy is its
deep-link route (`components`), which here builds the missing entries first.

Gradio also rebuilt an entry each time an event set a component: twice for each `gr.update(...)` (the new
component, then `_update_config`), each with three JSON schemas of the component's API, in the event loop. An
answer's first and last frames set a dozen components that way (the chat list, the buttons): measured with 16
answers at once, that was ~10% of the event loop's CPU. Here an entry set is dropped and built again, with the
newest value, when it is read.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import gradio as gr
import gradio.state_holder as state_holder

_EAGER = state_holder.SessionState


class _WithoutBlocks:
    """What SessionState.__init__ reads of the Blocks, with no block to build a configuration for."""

    def __init__(self, blocks: Any) -> None:
        self.default_config = blocks.default_config
        self.blocks: dict[int, Any] = {}


class LazySessionState(_EAGER):
    def __init__(self, blocks: Any) -> None:
        super().__init__(_WithoutBlocks(blocks))  # type: ignore[arg-type]  # SessionState reads only these two of the Blocks
        self._app_blocks = blocks.blocks
        self._values: dict[int, Any] = {}  # the value each component was last set to (its entry built when read)

    def __setitem__(self, key: int, value: Any) -> None:
        """Gradio's, except that the block's entry is built when read."""
        block = self.blocks_config.blocks.get(key)
        if isinstance(block, gr.State):
            self._state_ttl[key] = (block.time_to_live, datetime.datetime.now())
            self.state_data[key] = value
        else:
            self.blocks_config.blocks[key] = value
        self.config_values.pop(key, None)

    def _update_config(self, key: int) -> None:
        self.config_values.pop(key, None)

    def _update_value_in_config(self, key: int, value: Any) -> None:
        self._values[key] = value
        built = self.config_values.get(key)
        if built is not None and "props" in built:
            built["props"]["value"] = value

    @property
    def components(self) -> Iterator[dict]:
        for key, block in self.blocks_config.blocks.items():
            if key in self._app_blocks and key not in self.config_values:
                config = self.config_values[key] = self.blocks_config.config_for_block(key, [], block)
                if key in self._values and "props" in config:
                    config["props"]["value"] = self._values[key]
        return _EAGER.components.fget(self)  # type: ignore[attr-defined]  # a property of Gradio's SessionState


def lazy_session_config() -> None:
    """Make Gradio's StateHolder create LazySessionState objects (idempotent)."""
    state_holder.SessionState = LazySessionState  # type: ignore[misc]  # replaces Gradio's class, by design
