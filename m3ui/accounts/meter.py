"""AnswerMeter: what the chat core asks of the accounts around an answer (m3ui/chat_session/runner.py):
whether the person may send it (daily token quota), and recording what it cost once it finished.

The engine reports prompt and completion tokens per step (a tool loop has several); the engine time is the
answer's wall time from start to end, tool runs included.
"""

from __future__ import annotations

from collections.abc import Iterable

from m3ui.accounts.usage import AnswerUsage, UsageLedger
from m3ui.client.events import StreamStats


class AnswerMeter:
    def __init__(self, ledger: UsageLedger) -> None:
        self.ledger = ledger

    def refusal(self, user: str | None) -> str | None:
        """Why `user` may not send a request now (its quota is used up), or None (also for no account)."""
        return self.ledger.refusal(user)

    def record(self, user: str | None, stats: Iterable[StreamStats | None], started_at: float,
               ended_at: float) -> None:
        if not user:
            return
        steps = [s for s in stats if s is not None]
        self.ledger.record(user, AnswerUsage(sum(s.prompt_tokens or 0 for s in steps),
                                             sum(s.completion_tokens or 0 for s in steps),
                                             max(0.0, ended_at - started_at)), at=ended_at or None)
