"""Structured output: the text a grammar-constrained request gets, a value that satisfies the constraint.

sglang-kt constrains decoding with a grammar (protocol.ChatCompletionRequest.to_sampling_params):
response_format json_schema gives its schema, json_object the schema `{"type": "object"}`, `regex` a regular
expression the whole output must match. A tool_choice constraint yields to these ("Constrained decoding is
not compatible with tool calls"). Unless thinking_mode is enabled (the grammar then starts after
`</mm:think>`, reasoner_grammar_backend.py), the output is the constrained text and nothing else.

The sim's value is deterministic: the reply's answer goes into the first free string, and every other slot
takes the first value its schema allows (const, enum, the bounds, a pattern's first match).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import exrex

from launch.sim.request import ChatRequest

JSON_OBJECT_SCHEMA: dict[str, Any] = {"type": "object"}
ANSWER_KEY = "answer"  # where a json_object reply puts the answer
MAX_REGEX_REPEAT = 8  # an unbounded repeat in a regex (`+`, `*`) is expanded at most this often
FORMAT_EXAMPLES = {
    "date": "2026-01-01", "date-time": "2026-01-01T00:00:00Z", "time": "00:00:00Z", "email": "user@example.com",
    "uri": "https://example.com/", "hostname": "example.com", "ipv4": "127.0.0.1", "ipv6": "::1",
    "uuid": "00000000-0000-4000-8000-000000000000",
}


@dataclass(frozen=True)
class Constraint:
    kind: Literal["json_schema", "regex"]
    value: Any  # the JSON schema, or the regular expression


def request_constraint(request: ChatRequest) -> Constraint | None:
    """The grammar the request's own fields ask for (ebnf and structural tags leave the sim's text free)."""
    response_format = request.response_format
    if response_format is not None and response_format.type == "json_schema" and response_format.json_schema:
        return Constraint("json_schema", response_format.json_schema.schema_)
    if response_format is not None and response_format.type == "json_object":
        return Constraint("json_schema", JSON_OBJECT_SCHEMA)
    if request.regex is not None:
        return Constraint("regex", request.regex)
    return None


def constrained_text(constraint: Constraint, answer: str) -> str:
    if constraint.kind == "regex":
        return regex_example(constraint.value)
    return json.dumps(_Filler(constraint.value, answer).value(constraint.value), ensure_ascii=False)


def regex_example(pattern: str) -> str:
    """The first string the pattern fully matches, in exrex's order."""
    return next(exrex.generate(pattern, limit=MAX_REGEX_REPEAT), "")


class _Filler:
    """Builds one value for a schema; `answer` fills the first string that has no rule of its own."""

    def __init__(self, root: Any, answer: str) -> None:
        self._root = root
        self._answer: str | None = answer

    def value(self, schema: Any, name: str = ANSWER_KEY) -> Any:
        if not isinstance(schema, Mapping):
            return self._string({}, name)  # `true` or a missing schema: anything goes
        if "$ref" in schema:
            return self.value(self._resolve(str(schema["$ref"])), name)
        if "const" in schema:
            return schema["const"]
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return schema["enum"][0]
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list) and schema[key]:
                return self.value(schema[key][0], name)
        if isinstance(schema.get("allOf"), list):
            merged = {k: v for k, v in schema.items() if k != "allOf"}
            for part in schema["allOf"]:
                merged.update(self._resolve(part["$ref"]) if isinstance(part, Mapping) and "$ref" in part else part)
            return self.value(merged, name)
        kind = _type_of(schema)
        if kind == "object":
            return self._object(schema)
        if kind == "array":
            return self._array(schema, name)
        if kind in ("integer", "number"):
            return _number(schema, kind)
        if kind == "boolean":
            return True
        if kind == "null":
            return None
        return self._string(schema, name)

    def _resolve(self, ref: str) -> Any:
        node: Any = self._root
        for part in ref.removeprefix("#").strip("/").split("/"):
            if part:
                node = node.get(part.replace("~1", "/").replace("~0", "~"), {}) if isinstance(node, Mapping) else {}
        return node

    def _object(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        given = schema.get("properties")
        properties: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
        required = [n for n in schema.get("required") or [] if isinstance(n, str)]
        extra = schema.get("additionalProperties", True)
        names = list(properties) + [n for n in required if n not in properties]
        if not names and extra is not False:
            names = [ANSWER_KEY]
        out = {n: self.value(properties.get(n, extra if isinstance(extra, Mapping) else True), n) for n in names}
        while len(out) < int(schema.get("minProperties", 0)):
            key = f"field_{len(out) + 1}"
            out[key] = self.value(extra if isinstance(extra, Mapping) else True, key)
        return out

    def _array(self, schema: Mapping[str, Any], name: str) -> list[Any]:
        given = schema.get("prefixItems")
        prefix: list[Any] = given if isinstance(given, list) else []
        items = schema.get("items", True)
        count = max(int(schema.get("minItems", 1)), len(prefix))
        if "maxItems" in schema:
            count = min(count, int(schema["maxItems"]))
        if items is False:
            count = min(count, len(prefix))
        return [self.value(prefix[i] if i < len(prefix) else items, name) for i in range(count)]

    def _string(self, schema: Mapping[str, Any], name: str) -> str:
        if isinstance(schema.get("pattern"), str):
            return regex_example(schema["pattern"])
        if schema.get("format") in FORMAT_EXAMPLES:
            return FORMAT_EXAMPLES[schema["format"]]
        text, self._answer = (self._answer, None) if self._answer else (name, self._answer)
        if "maxLength" in schema:
            text = text[:int(schema["maxLength"])]
        return text.ljust(int(schema.get("minLength", 0)), ".")


def _type_of(schema: Mapping[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), kind[0] if kind else None)
    if isinstance(kind, str):
        return kind
    if "properties" in schema or "required" in schema:
        return "object"
    if "items" in schema or "prefixItems" in schema:
        return "array"
    return "string"


def _number(schema: Mapping[str, Any], kind: str) -> int | float:
    """The smallest allowed value at or above 0 (or the largest below the maximum), on multipleOf's grid."""
    step = schema.get("multipleOf") or 1
    low = max((b for b in (schema.get("minimum"), _past(schema.get("exclusiveMinimum"), step)) if b is not None),
              default=None)
    high = min((b for b in (schema.get("maximum"), _past(schema.get("exclusiveMaximum"), -step)) if b is not None),
               default=None)
    value = 0 if low is None else -(-low // step) * step  # the first grid point at or above the minimum
    if high is not None and value > high:
        value = (high // step) * step
    return int(value) if kind == "integer" or float(value).is_integer() else value


def _past(bound: Any, step: float) -> float | None:
    return None if bound is None or isinstance(bound, bool) else bound + step
