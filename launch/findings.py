"""A check's result: what is wrong (or risky), on which field, and the concrete fix."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Level = Literal["error", "warning", "ok"]


@dataclass(frozen=True)
class Finding:
    level: Level
    field: str | None  # LaunchSettings field name, or None for host-wide findings
    message: str
    fix: str | None = None
    # Setting changes that apply the fix, where one exists: (field name, new value) pairs.
    changes: tuple[tuple[str, Any], ...] = ()
    check: str = ""  # which rule produced it, for tests and the UI

    @property
    def is_error(self) -> bool:
        return self.level == "error"


def has_errors(findings: list[Finding] | tuple[Finding, ...]) -> bool:
    return any(f.is_error for f in findings)


def format_findings(findings: list[Finding] | tuple[Finding, ...]) -> str:
    if not findings:
        return "no findings"
    lines = []
    for f in findings:
        where = f" [{f.field}]" if f.field else ""
        lines.append(f"{f.level.upper():7}{where} {f.message}")
        if f.fix:
            lines.append(f"        fix: {f.fix}")
    return "\n".join(lines)
