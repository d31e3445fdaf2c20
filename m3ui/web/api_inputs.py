"""Checks a Gradio API call before the app runs it: the function exists and its inputs have usable values.

Gradio answers an unknown fn_index or API name with a 500 and a traceback in the log, and passes null or
wrongly typed values straight to the handlers, which then fail with raw Python errors ('NoneType' object has
no attribute ...). Here an unknown function gets a 404 and a value of the wrong type a 422, each with a plain
message; a null where a component always holds a value is read as that component's empty value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

NUMBER = (int, float)
# The values each component can hold (by Gradio block name). Components not listed (state, files,
# datasets...) are not checked here: Gradio fills state in itself, the rest Gradio parses.
EXPECTED: dict[str, tuple[type, ...]] = {
    "textbox": (str,),
    "code": (str,),
    "checkbox": (bool,),
    "slider": NUMBER,
    "checkboxgroup": (list,),
    "number": NUMBER,
    "radio": (str, *NUMBER),
    "dropdown": (str, *NUMBER, list),
    "dataset": (int,),  # the index of the clicked example
}
# A null means "empty": the browser itself sends null for a textbox nobody typed into. Components missing
# here pass a null on (a Number, Radio or Dropdown can be empty; their handlers expect None).
EMPTY: dict[str, Any] = {"textbox": "", "code": "", "checkbox": False, "checkboxgroup": []}
NULLABLE = ("number", "radio", "dropdown")
# Events whose handlers read what was selected, liked, typed...: the browser always sends that event data.
DATA_EVENTS = frozenset({"select", "like", "key_up", "copy", "edit", "retry", "undo", "option_select"})
TYPE_WORDS = {str: "text", bool: "true/false", int: "a number", float: "a number", list: "a list",
              type(None): "null"}


class CallRefused(ValueError):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def find_fn(fns: Mapping[int, Any], fn_index: Any, api_name: str | None) -> Any:
    """The handler a call names by fn_index (which Gradio prefers) or by API name; refuses unknown ones."""
    if fn_index is not None:
        if isinstance(fn_index, bool) or not isinstance(fn_index, int) or fn_index not in fns:
            raise CallRefused(404, f"unknown function number {str(fn_index)[:40]}")
        return fns[fn_index]
    if api_name is not None:
        for fn in fns.values():
            if fn.api_name == api_name:
                return fn
        raise CallRefused(404, f"unknown API endpoint {api_name[:80]!r}")
    raise CallRefused(422, "the call names no function: give fn_index or call /run/NAME")


def _component(block: Any) -> str:
    name = block.get_block_name()
    label = getattr(block, "label", None)
    return f"{name} {label!r}" if label else name


def check_inputs(fn: Any, data: Any, simple: bool) -> list[Any]:
    """`data` must hold one value per input (in the simple /call format: per input the API shows); returns
    it with each null that means "empty" replaced by the component's empty value."""
    if not isinstance(data, list):
        raise CallRefused(422, "'data' must be a list of input values")
    inputs = list(fn.inputs)
    if simple and len(data) != len(inputs):
        inputs = [block for block in inputs if not block.skip_api]
    if len(data) != len(inputs):
        raise CallRefused(422, f"{fn.api_name or 'this function'} takes {len(inputs)} inputs, got {len(data)}")
    checked = []
    for position, (block, value) in enumerate(zip(inputs, data, strict=True), start=1):
        kind = block.get_block_name()
        if value is None and kind in EMPTY:
            value = EMPTY[kind]
        expected = EXPECTED.get(kind)
        if expected is not None and not isinstance(value, expected) and not (value is None and kind in NULLABLE):
            wanted = " or ".join(dict.fromkeys(TYPE_WORDS[t] for t in expected))
            raise CallRefused(422, f"{fn.api_name or 'this function'}: input {position} ({_component(block)}) "
                                   f"must be {wanted}, got {TYPE_WORDS.get(type(value), type(value).__name__)}")
        checked.append(value)
    return checked


def check_call(fns: Mapping[int, Any], route: str, api_name: str | None, body: Any) -> Any:
    """The body to hand to Gradio (nulls read as empty values), or CallRefused for a call the app cannot run;
    `route` is join, run, api, call or call/v2."""
    if not isinstance(body, dict):
        raise CallRefused(422, "the request body must be a JSON object")
    fn = find_fn(fns, None if route == "call/v2" else body.get("fn_index"), api_name)
    if route == "call/v2":  # named arguments, which Gradio checks itself
        return body
    if fn.collects_event_data and {event for _, event in fn.targets} <= DATA_EVENTS \
            and not isinstance(body.get("event_data"), dict):
        raise CallRefused(422, f"{fn.api_name or 'this function'} answers the '{fn.targets[0][1]}' event: "
                               "send its event_data")
    if "data" in body:
        return {**body, "data": check_inputs(fn, body["data"], simple=route == "call")}
    return body
