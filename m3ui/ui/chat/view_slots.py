"""The Chat tab's components by name, and its handlers' values keyed by those names.

ChatController's handlers return {slot name: value}, never positional tuples, and `keyed` hands them to Gradio as
{component: value} (issue 28): an event's outputs may be listed in any order, and a value for a component the event
does not output fails loudly (KeyError naming the slot) instead of landing in its neighbour. A slot a handler leaves
out stays as it is (Gradio skips it)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import gradio as gr

# The components every full update of the Chat tab sets (ChatController.show fills them all)
SLOTS = ("library", "outbox", "chatbot", "chat_picker", "title", "system_prompt", "message", "send", "stop",
         "regenerate", "continue_answer", "clear", "new_chat", "rename", "delete", "export_md", "export_json", "undo",
         "message_actions", "versions", "version_label", "message_times",
         # the settings a chat keeps (m3ui.conversation.library.CHAT_SETTINGS)
         "thinking_mode", "temperature", "top_p", "max_tokens", "stall_seconds", "keep_reasoning",
         "tools")

Values = dict[str, object]  # a handler's result: slot name -> value (an empty one changes nothing)


class Slots:
    """The tab's components by slot name; `keyed` wires a handler that returns Values to the components it names."""

    def __init__(self, components: Mapping[str, gr.components.Component]) -> None:
        self._components = dict(components)

    def keyed(self, fn: Callable[..., Any], names: Iterable[str]) -> dict[str, Any]:
        """`fn=` and `outputs=` for an event whose handler `fn` returns Values (or yields them) for `names`."""
        outputs = {name: self._components[name] for name in names}

        def by_component(values: Values) -> object:
            # {} skips every output (Gradio takes a single skip for all of them; it refuses an empty dict)
            return {outputs[name]: value for name, value in values.items()} or gr.skip()

        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def streamed(*args: Any, **kwargs: Any) -> Iterator[object]:
                frames = fn(*args, **kwargs)
                try:
                    for values in frames:
                        yield by_component(values)
                finally:
                    frames.close()  # the page left mid-answer: the handler's own cleanup runs now
            return {"fn": streamed, "outputs": list(outputs.values())}

        @functools.wraps(fn)
        def handled(*args: Any, **kwargs: Any) -> object:
            return by_component(fn(*args, **kwargs))
        return {"fn": handled, "outputs": list(outputs.values())}
