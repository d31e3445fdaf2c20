"""The settings form: one widget per field of the settings table, and the exact conversion both ways.

A widget holds what a browser can hold: text, a number, a checkbox, a dropdown choice. `form_values` turns
settings into those values and `read_form` turns them back. A value that cannot be held by its field at
all (text in a number, `-1.5` in an int) becomes an error finding on that field, and the field keeps the
base settings' value, so one bad keystroke never loses the rest of the settings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from launch.command import Engine, EngineKind
from launch.findings import Finding
from launch.settings import FlagSpec, Group, LaunchSettings, SettingsError, coerce, setting_fields

Widget = Literal["checkbox", "dropdown", "integer", "number", "text", "secret", "list"]
FormValue = str | int | float | bool | None
UNSET = ""  # the dropdown choice, and the empty text, that leaves a field unset
EXTRA_ARGS = "extra_args"


@dataclass(frozen=True)
class FormField:
    name: str
    label: str  # the engine flag, as operators know it from the tutorials
    help: str
    group: Group
    widget: Widget
    default: Any
    choices: tuple[str, ...] = ()
    optional: bool = True  # the field may be left unset (the engine's own default applies)


def _widget(spec: FlagSpec) -> Widget:
    if spec.kind == "bool":
        return "checkbox"
    if spec.choices:
        return "dropdown"
    return {"int": "integer", "float": "number", "int_list": "list", "secret": "secret"}.get(spec.kind, "text")  # type: ignore[return-value]  # every value is a Widget


def _range_text(spec: FlagSpec) -> str:
    if spec.lo is None or spec.hi is None:
        return ""
    lo, hi = (f"{v:,.0f}" if float(v).is_integer() else f"{v:g}" for v in (spec.lo, spec.hi))
    return f" Range {lo} to {hi}."


def _form_fields() -> tuple[FormField, ...]:
    fields = [FormField(f.name, f.spec.flag, f.spec.help + _range_text(f.spec), f.spec.group, _widget(f.spec),
                        f.default, f.spec.choices, optional=f.default is None or f.spec.kind == "bool")
              for f in setting_fields()]
    fields.append(FormField(EXTRA_ARGS, "extra arguments", "Other sglang-kt 0.7.2 flags, e.g. "
                            "--context-length 65536. Each word becomes one argument; nothing is run by a shell.",
                            "advanced", "text", ""))
    return tuple(fields)


FORM_FIELDS: tuple[FormField, ...] = _form_fields()
FIELD_INDEX = {f.name: i for i, f in enumerate(FORM_FIELDS)}


def widget_value(field: FormField, value: Any) -> FormValue:
    """What the field's widget shows for a settings value."""
    if field.widget == "checkbox":
        return bool(value)
    if value is None:
        return None if field.widget in ("integer", "number") else UNSET
    if field.widget == "list":
        return " ".join(str(v) for v in value)
    return value


def form_values(settings: LaunchSettings) -> tuple[FormValue, ...]:
    """The widget values of every form field, in FORM_FIELDS order."""
    return tuple(widget_value(f, getattr(settings, f.name)) for f in FORM_FIELDS)


@dataclass(frozen=True)
class FormReading:
    settings: LaunchSettings
    errors: tuple[Finding, ...]  # one per field whose value its type cannot hold

    @property
    def ok(self) -> bool:
        return not self.errors


def read_form(values: Sequence[FormValue], base: LaunchSettings | None = None) -> FormReading:
    """Widget values (FORM_FIELDS order) → settings; unreadable fields keep `base`'s value and are reported."""
    if len(values) != len(FORM_FIELDS):
        raise ValueError(f"expected {len(FORM_FIELDS)} form values, got {len(values)}")
    base = base or LaunchSettings()
    changes: dict[str, Any] = {}
    errors: list[Finding] = []
    for field, raw in zip(FORM_FIELDS, values, strict=True):
        try:
            changes[field.name] = coerce(field.name, _raw(field, raw))
        except SettingsError as exc:
            errors.append(Finding("error", field.name, str(exc), _fix_for(field), check="form"))
    return FormReading(base.replace(**changes), tuple(errors))


def _raw(field: FormField, raw: FormValue) -> FormValue:
    # A dropdown the browser cleared sends None; the table's "unset" is the empty choice.
    if field.widget == "dropdown" and raw is None:
        return UNSET
    return raw


def _fix_for(field: FormField) -> str:
    if field.widget == "integer":
        return "enter a whole number" + ("" if not field.optional else ", or clear the field")
    if field.widget == "number":
        return "enter a number" + ("" if not field.optional else ", or clear the field")
    if field.widget == "list":
        return "enter whole numbers separated by spaces, e.g. 0 1"
    return "enter a value"


ENGINE_KINDS: tuple[tuple[str, EngineKind], ...] = (
    ("Simulated engine (no GPU needed)", "sim"), ("sglang-kt (real engine)", "sglang"))


def read_engine(kind: str | None, python: str | None) -> Engine:
    """The engine choice of the form; an empty Python means `python` on PATH."""
    if kind not in ("sim", "sglang"):
        raise ValueError(f"engine kind {kind!r}: use 'sim' or 'sglang'")
    return Engine(kind, (python or "").strip() or Engine().python)  # type: ignore[arg-type]  # one of the two kinds: checked above
