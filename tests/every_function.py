"""Every Gradio function of an app called as one person with one value in every input, for the tests that one
person's data never reaches another: whatever a function gives back must not hold the other's, and the other's
data must be as it was."""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Sequence

import gradio as gr
from gradio.context import LocalContext

MIN_FUNCTIONS = 40  # the main app has more: fewer means the app was not built whole, and the test proves little


def as_user(name: str) -> gr.Request:
    request = gr.Request(username=name)
    LocalContext.request.set(request)
    return request


def outputs_as(demo: gr.Blocks, user: str, value: object) -> Iterator[tuple[str, list[object]]]:
    """(function name, what it gave back) for each function of `demo`, called as `user` with `value` in every input
    but its states; a function that refuses (raises) gave back nothing."""
    for fn in demo.fns.values():
        if fn.fn is None:
            continue
        args = [None if isinstance(block, gr.State) else value for block in fn.inputs]
        request = as_user(user)
        try:
            takes_request = "request" in inspect.signature(fn.fn).parameters
            result = fn.fn(*args, request=request) if takes_request else fn.fn(*args)
            outputs = list(result) if hasattr(result, "__next__") else [result]
        except Exception:  # refused or unusable input: what matters is what reached the other person's data
            outputs = []
        yield fn.name, outputs


def assert_no_output_holds(demo: gr.Blocks, user: str, values: Sequence[object], secret: str) -> None:
    """Each value tried in every function as `user`: none gives back `secret` (another person's)."""
    tried = 0
    for value in values:
        for name, outputs in outputs_as(demo, user, value):
            tried += 1
            assert secret not in repr(outputs), name
    assert tried >= MIN_FUNCTIONS * len(values)
