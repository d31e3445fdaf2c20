"""Gradio's per-session copy of the page's configuration, built for the components a session really touches.

Gradio creates a SessionState at a session's first queued event (each page load, each API client) and builds
in it the configuration of every component of the app: for each one an `inspect.signature` of its constructor
and a walk of its properties, about 60 ms for this app's few hundred components. Measured with 16 new sessions
answering at once (benchmarks/bench_chat_stream.py), that was 38% of the event loop's CPU. Gradio itself fills
an entry on demand when one is missing (`_update_value_in_config`), and the one reader of the whole copy is its
deep-link route (`components`), which here builds the missing entries first.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gradio.state_holder as state_holder

_EAGER = state_holder.SessionState


class _WithoutBlocks:
    """What SessionState.__init__ reads of the Blocks, with no block to build a configuration for."""

    def __init__(self, blocks: Any) -> None:
        self.default_config = blocks.default_config
        self.blocks: dict[int, Any] = {}


class LazySessionState(_EAGER):  # type: ignore[misc, valid-type]
    def __init__(self, blocks: Any) -> None:
        super().__init__(_WithoutBlocks(blocks))
        self._app_blocks = blocks.blocks

    @property
    def components(self) -> Iterator[dict]:
        for key, block in self.blocks_config.blocks.items():
            if key in self._app_blocks and key not in self.config_values:
                self.config_values[key] = self.blocks_config.config_for_block(key, [], block)
        return _EAGER.components.fget(self)  # type: ignore[no-any-return]


def lazy_session_config() -> None:
    """Make Gradio's StateHolder create LazySessionState objects (idempotent)."""
    state_holder.SessionState = LazySessionState  # type: ignore[misc]
