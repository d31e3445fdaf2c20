"""Small HTML pieces the admin sections share: escaped text, key/value tables, findings and outcomes.

Every value that came from a form, a log or a file goes through `esc`; nothing here trusts its input.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from launch.advice import Figure
from launch.findings import Finding
from m3ui.admin.console import Outcome
from m3ui.admin.form import FIELD_INDEX, FORM_FIELDS
from m3ui.ui.monitor.format import esc

_ICONS = {"error": "✖", "warning": "▲", "ok": "✔", "info": "●"}


def field_label(name: str | None) -> str:
    if name is None:
        return "host"
    return FORM_FIELDS[FIELD_INDEX[name]].label if name in FIELD_INDEX else name


def figures_table(rows: Iterable[Figure], css: str = "m3a-kv") -> str:
    body = "".join(f"<tr><th>{esc(r.label)}</th><td>{esc(r.value)}</td></tr>" for r in rows)
    return f'<table class="{css}">{body}</table>'


def finding_item(f: Finding, with_field: bool = True) -> str:
    where = f'<code class="m3a-flag">{esc(field_label(f.field))}</code> ' if with_field and f.field else ""
    fix = f'<div class="m3a-fix">→ {esc(f.fix)}</div>' if f.fix else ""
    return (f'<li class="m3a-finding m3a-{f.level}" data-check="{esc(f.check)}"><span class="m3a-icon">'
            f'{_ICONS.get(f.level, "•")}</span><div>{where}{esc(f.message)}{fix}</div></li>')


def findings_list(findings: Sequence[Finding], empty: str = "", with_field: bool = True) -> str:
    if not findings:
        return f'<div class="m3a-empty">{esc(empty)}</div>' if empty else ""
    ordered = sorted(findings, key=lambda f: {"error": 0, "warning": 1}.get(f.level, 2))
    return '<ul class="m3a-findings">' + "".join(finding_item(f, with_field) for f in ordered) + "</ul>"


def field_message(findings: Sequence[Finding]) -> str:
    """Under a form field: its own findings, compact (empty when it has none, and CSS hides it then)."""
    return findings_list(findings, with_field=False)


def counts(findings: Sequence[Finding]) -> str:
    errors = sum(f.level == "error" for f in findings)
    warnings = sum(f.level == "warning" for f in findings)
    parts = [f"{errors} error{'s' * (errors != 1)}"] if errors else []
    parts += [f"{warnings} warning{'s' * (warnings != 1)}"] if warnings else []
    return ", ".join(parts)


def outcome_html(outcome: Outcome | None) -> str:
    if outcome is None:
        return ""
    return (f'<div class="m3a-outcome m3a-{outcome.level}" role="status"><span class="m3a-icon">'
            f'{_ICONS.get(outcome.level, "●")}</span><div><div>{esc(outcome.message)}</div>'
            f'{findings_list(outcome.findings)}</div></div>')


def duration(seconds: float) -> str:
    seconds = int(max(0, seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"
