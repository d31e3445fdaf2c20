"""Check a tool's `parameters` schema as the engine does, and untrusted tool arguments against it (the
subset of JSON Schema the tools here use)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator, SchemaError

_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


def parameters_problem(parameters: object) -> str | None:
    """Why sglang-kt would refuse `parameters` (serving_chat._validate_request checks every declared tool's
    schema against JSON Schema Draft 2020-12 and fails the whole request), or None when it is accepted."""
    try:
        Draft202012Validator.check_schema(parameters)
    except SchemaError as exc:
        where = "".join(f"[{p!r}]" for p in exc.path)  # where in the schema, as the engine's message says it
        return f"{exc.message}{f' (at parameters{where})' if where else ''}"
    return None


def _json_type_name(value: object) -> str:
    if isinstance(value, float):
        return "number"
    return next((name for name in _PYTHON_TYPES if _is_type(value, name)), type(value).__name__)


def _is_type(value: object, name: str) -> bool:
    # bool is an int in Python but not in JSON Schema.
    if isinstance(value, bool) and name in ("integer", "number"):
        return False
    return isinstance(value, _PYTHON_TYPES.get(name, (object,)))


def schema_errors(schema: Mapping[str, object], value: object, path: str = "arguments") -> list[str]:
    """Every way `value` breaks `schema`, as messages the model can act on; [] when it is valid."""
    expected = schema.get("type")
    if expected is not None:
        names = expected if isinstance(expected, list) else [expected]
        if not any(_is_type(value, str(name)) for name in names):
            return [f"{path}: expected {' or '.join(map(str, names))}, got {_json_type_name(value)} {value!r:.60}"]
    enum = schema.get("enum")
    if isinstance(enum, list) and value not in enum:
        return [f"{path}: must be one of {enum}, got {value!r:.60}"]
    errors = _range_errors(schema, value, path)
    if isinstance(value, dict):
        errors += _object_errors(schema, value, path)
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            errors += schema_errors(schema["items"], item, f"{path}[{index}]")  # type: ignore[arg-type]  # a Mapping: checked above
    return errors


def _range_errors(schema: Mapping[str, object], value: object, path: str) -> list[str]:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return []
    minimum, maximum = schema.get("minimum"), schema.get("maximum")
    if isinstance(minimum, int | float) and value < minimum:
        return [f"{path}: must be at least {minimum}, got {value}"]
    if isinstance(maximum, int | float) and value > maximum:
        return [f"{path}: must be at most {maximum}, got {value}"]
    return []


def _object_errors(schema: Mapping[str, Any], value: dict[str, object], path: str) -> list[str]:
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    required = schema.get("required")
    errors = [f"{path}: missing required '{name}'" for name in required or () if name not in value]
    extra_schema = schema.get("additionalProperties", True)
    for name, item in value.items():
        if name in properties:
            errors += schema_errors(properties[name], item, f"{path}.{name}")
        elif extra_schema is False:
            errors.append(f"{path}: unexpected '{name}' (allowed: {', '.join(properties) or 'none'})")
        elif isinstance(extra_schema, Mapping):
            errors += schema_errors(extra_schema, item, f"{path}.{name}")
    return errors
