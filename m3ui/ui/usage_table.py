"""Usage per person per day as an HTML table (the admin's Users tab shows everyone's, the Account tab one's own)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from m3ui.accounts.usage import DayUsage
from m3ui.ui.monitor.format import esc
from m3ui.ui.wide_table import scrolling


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
    chart = usage_chart(days) if with_user else ""
    table = f'<table class="m3-usage"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'
    return chart + note + scrolling(table, "Usage per day")


def usage_chart(days: Sequence[DayUsage]) -> str:
    """Tokens per person over the days given, as bars scaled to the heaviest user: who uses the engine, at a glance."""
    totals = Counter[str]()
    for d in days:
        totals[d.user] += d.tokens
    top = max(totals.values(), default=0) or 1
    bars = "".join(
        f'<div class="m3-usage-bar"><span class="m3-usage-name">{esc(user)}</span>'
        f'<span class="m3-usage-fill" style="width:{100 * tokens / top:.1f}%"></span>'
        f'<span class="m3-usage-figure">{tokens:,}</span></div>' for user, tokens in totals.most_common())
    span = f"{days[-1].day} to {days[0].day}" if days else ""
    return f'<div class="m3-usage-chart" title="tokens (prompt + completion), {span}">{bars}</div>'
