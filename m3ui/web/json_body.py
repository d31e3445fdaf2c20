"""A JSON request body parsed with its nesting bounded.

Python's parser raises RecursionError (not a JSONDecodeError) on a body like `[[[[…` a few thousand levels deep,
and a body just under that depth parses but breaks later code that walks it recursively: either way the client
got a 500 and the log a traceback. No call of the pages nests more than a handful of levels.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 64


class TooDeep(ValueError):
    def __init__(self) -> None:
        super().__init__(f"JSON nested deeper than {MAX_DEPTH} levels")


def depth(value: Any) -> int:
    """How deeply lists and objects nest in `value` (0 for a plain value); walked without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, level + 1)
            if deepest > MAX_DEPTH:
                break
            stack.extend((child, level + 1) for child in item)
    return deepest


def load_json(body: bytes | str) -> Any:
    """The parsed body; json.JSONDecodeError / UnicodeDecodeError when it is not JSON, TooDeep past MAX_DEPTH."""
    try:
        value = json.loads(body)
    except RecursionError:
        raise TooDeep() from None
    if depth(value) > MAX_DEPTH:
        raise TooDeep()
    return value
