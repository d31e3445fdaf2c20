"""A tool is a plain Python function; its JSON schema comes from the signature and the docstring."""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass

JsonSchema = dict[str, object]

_SIMPLE_TYPES: dict[object, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # what OpenAI-compatible servers accept as a function name


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: JsonSchema
    function: Callable[..., object]

    def __post_init__(self) -> None:
        if not TOOL_NAME.match(self.name):
            raise ValueError(f"tool name must be 1-64 letters, digits, '_' or '-'; got {self.name!r}")

    def to_openai(self) -> dict[str, object]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


def tool_from_function(function: Callable[..., object], name: str | None = None) -> Tool:
    """Derive the schema: annotations give types, defaults make a parameter optional, and the docstring's
    first paragraph and `Args:` section give the descriptions."""
    summary, arg_docs = _parse_docstring(inspect.getdoc(function) or "")
    hints = typing.get_type_hints(function)
    properties: dict[str, object] = {}
    required: list[str] = []
    for param in inspect.signature(function).parameters.values():
        schema = json_schema_for(hints.get(param.name, str))
        if param.name in arg_docs:
            schema["description"] = arg_docs[param.name]
        if param.default is inspect.Parameter.empty:
            required.append(param.name)
        else:
            schema["default"] = param.default
        properties[param.name] = schema
    parameters: JsonSchema = {"type": "object", "properties": properties, "required": required,
                              "additionalProperties": False}
    return Tool(name or function.__name__, summary, parameters, function)


def json_schema_for(annotation: object) -> JsonSchema:
    """str/int/float/bool, list[X], Literal[...] and `X | None`."""
    if annotation in _SIMPLE_TYPES:
        return {"type": _SIMPLE_TYPES[annotation]}
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Literal:
        return {"type": _SIMPLE_TYPES[type(args[0])], "enum": list(args)}
    if origin is list:
        return {"type": "array", "items": json_schema_for(args[0]) if args else {}}
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        (inner,) = [arg for arg in args if arg is not type(None)]
        schema = json_schema_for(inner)
        schema["type"] = [schema["type"], "null"]
        return schema
    raise TypeError(f"no JSON schema for annotation {annotation!r}")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """First paragraph, and `name: description` lines of a Google-style `Args:` section."""
    summary = " ".join(doc.split("\n\n", 1)[0].split())
    arg_docs: dict[str, str] = {}
    in_args = False
    current = None
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped in ("Args:", "Arguments:", "Parameters:"):
            in_args = True
            continue
        if not in_args:
            continue
        match = re.match(r"^(\w+)(?: \([^)]*\))?:\s*(.*)$", stripped)
        if match and line.startswith("    ") and not line.startswith("        "):
            current = match.group(1)
            arg_docs[current] = match.group(2)
        elif stripped and current and line.startswith("        "):
            arg_docs[current] += " " + stripped
        elif not line.startswith(" ") and stripped:
            break  # next section
    return summary, arg_docs
