"""Custom tools defined by data: a JSON schema plus a result template filled with the call's arguments.

The template uses string.Template (`$city`, `${days}`): plain substitution only. str.format would let
`{x.__class__}` reach attributes of the values, and both the template and the values are untrusted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from string import Template

from m3ui.tools.tool import JsonSchema, Tool
from m3ui.tools.validate import parameters_problem


class CustomToolError(ValueError):
    """The custom tool definition is unusable; the message says what to fix."""


def template_tool(name: str, description: str, parameters: Mapping[str, object], result_template: str) -> Tool:
    if parameters.get("type") != "object" or not isinstance(parameters.get("properties", {}), Mapping):
        raise CustomToolError('parameters must be a JSON schema with "type": "object" and a "properties" object')
    problem = parameters_problem(parameters)
    if problem is not None:
        raise CustomToolError(f"the engine refuses this parameters schema (JSON Schema Draft 2020-12): {problem}")
    template = Template(result_template)
    if not template.is_valid():
        raise CustomToolError("result template has a bad placeholder; use $name or ${name}, and $$ for a dollar")
    properties = dict(parameters.get("properties", {}))  # type: ignore[call-overload]  # an object: checked above
    unknown = [key for key in template.get_identifiers() if key not in properties]
    if unknown:
        raise CustomToolError(f"result template uses {unknown}, which are not parameters ({', '.join(properties)})")
    schema: JsonSchema = {"additionalProperties": False, **parameters}

    def render(**arguments: object) -> str:
        values = {key: _as_text(arguments.get(key, _default(spec))) for key, spec in properties.items()}
        return template.substitute(values)

    try:
        return Tool(name, description, schema, render)
    except ValueError as exc:
        raise CustomToolError(str(exc)) from exc


def template_tool_from_json(text: str) -> Tool:
    """`{"name", "description", "parameters": <JSON schema>, "result_template": "..."}`"""
    try:
        spec = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CustomToolError(f"tool definition is not valid JSON: {exc}") from exc
    if not isinstance(spec, dict):
        raise CustomToolError("tool definition must be a JSON object")
    missing = [key for key in ("name", "parameters", "result_template") if key not in spec]
    if missing:
        raise CustomToolError(f"tool definition lacks {', '.join(missing)}")
    if not isinstance(spec["parameters"], dict) or not isinstance(spec["result_template"], str):
        raise CustomToolError("parameters must be an object and result_template a string")
    return template_tool(str(spec["name"]), str(spec.get("description", "")), spec["parameters"],
                         spec["result_template"])


def _default(property_schema: object) -> object:
    """What an absent optional argument shows as: its schema default, else nothing."""
    return property_schema.get("default", "") if isinstance(property_schema, Mapping) else ""


def _as_text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
