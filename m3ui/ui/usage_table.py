"""Usage per person per day as an HTML table (the admin's Users tab shows everyone's, the Account tab one's own)."""

from __future__ import annotations

from collections.abc import Sequence

from m3ui.accounts.usage import DayUsage
from m3ui.ui.monitor.format import esc


def usage_table(days: Sequence[DayUsage], with_user: bool = True, quota: int | None = None) -> str:
    if not days:
        return '<div class="m3a-dim">No answers recorded yet.</div>'
    head = ("<th>user</th>" if with_user else "") + ("<th>day (UTC)</th><th>requests</th><th>prompt tokens</th>"
                                                     "<th>completion tokens</th><th>total</th><th>engine time</th>")
    rows = "".join(
        "<tr>" + (f"<td>{esc(d.user)}</td>" if with_user else "")
        + f"<td>{esc(d.day)}</td><td>{d.requests:,}</td><td>{d.prompt_tokens:,}</td><td>{d.completion_tokens:,}</td>"
        f"<td>{d.tokens:,}</td><td>{d.engine_seconds:,.1f} s</td></tr>" for d in days)
    note = f'<div class="m3a-dim">Daily quota: {quota:,} tokens (prompt + completion).</div>' \
        if quota is not None else ""
    return f'{note}<table class="m3-usage"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'
