"""M3 tool-call parameters typed by the tool's JSON schema, as sglang's minimax-m3 detector types them.

Mirrors sglang/srt/function_call/minimax_m3.py (_get_child_schema, _convert_leaf_value, _parse_parameter):
a scalar's text becomes int / float / bool / null by its schema, strings stay verbatim; nested tags become
objects, `<item>` children arrays.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from launch.sim.tokens import NAMESPACE

Schema = Mapping[str, Any]  # a JSON schema, as declared by the client
SCALAR_TYPES = frozenset({"string", "str", "integer", "int", "number", "float", "boolean", "bool", "null"})


def schema_types(schema: Any) -> list[str]:
    kind = schema.get("type") if isinstance(schema, Mapping) else None
    if isinstance(kind, str):
        return [kind.lower()]
    return [t.lower() for t in kind if isinstance(t, str)] if isinstance(kind, list) else []


def schema_has(schema: Any, *kinds: str) -> bool:
    return any(t in schema_types(schema) for t in kinds)


def child_schema(parent: Any, tag: str, parent_value: Any = None) -> Schema | None:
    if not isinstance(parent, Mapping):
        return None
    if schema_has(parent, "array") and tag == "item":
        index = len(parent_value) if isinstance(parent_value, list) else 0
        prefix = parent.get("prefixItems")
        for candidate in ((prefix[index] if isinstance(prefix, list) and index < len(prefix) else None),
                          parent.get("additionalItems"), parent.get("items"),
                          (prefix[-1] if isinstance(prefix, list) and prefix else None)):
            if isinstance(candidate, Mapping):
                return candidate
        return None
    properties = parent.get("properties")
    if isinstance(properties, Mapping) and tag in properties:
        return properties[tag] if isinstance(properties[tag], Mapping) else None
    extra = parent.get("additionalProperties")
    return extra if isinstance(extra, Mapping) else None


def leaf_value(text: str, schema: Any) -> Any:
    """A scalar's text → its JSON value by the schema (minimax_m3.py _convert_leaf_value)."""
    kinds = set(schema_types(schema))
    nullable = "null" in kinds
    if kinds & {"string", "str"} and not nullable:
        return text
    if nullable and text in ("null", "Null", "NULL", ""):
        return None
    if kinds & {"integer", "int"}:
        try:
            return int(text)
        except ValueError:
            pass
    if kinds & {"number", "float"}:
        try:
            number = float(text)
            return number if number != int(number) else int(number)
        except (ValueError, OverflowError):
            pass
    if kinds & {"boolean", "bool"}:
        if text.lower().strip() in ("true", "1", "yes", "on"):
            return True
        if text.lower().strip() in ("false", "0", "no", "off"):
            return False
    return text


def parse_parameter(body: str, schema: Any) -> Any:
    """Nested tags → a JSON value (minimax_m3.py _parse_parameter)."""
    chunks = [c.strip() for c in body.split(NAMESPACE) if c.strip()]
    root: Any = [] if schema_has(schema, "array") and chunks and chunks[0].startswith("<item>") else {}
    stack: list[tuple[str, Any, Any]] = [("", schema, root)]
    for chunk in chunks:
        if chunk.startswith("</"):
            tag, _, value = stack.pop()
            parent = stack[-1][2]
            if isinstance(parent, list):
                parent.append(value)
            elif tag in parent:
                parent[tag] = [*parent[tag], value] if isinstance(parent[tag], list) else [parent[tag], value]
            else:
                parent[tag] = value
            continue
        tag, _, text = chunk[1:].partition(">")
        schema_here = child_schema(stack[-1][1], tag.strip(), stack[-1][2])
        scalar = bool(set(schema_types(schema_here)) & SCALAR_TYPES) and not schema_has(schema_here, "object", "array")
        value = leaf_value(text, schema_here) if text or scalar else ([] if schema_has(schema_here, "array") else {})
        stack.append((tag.strip(), schema_here, value))
    return root
