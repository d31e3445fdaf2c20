"""The context budget of one send: system prompt + history + attachments + typed text + max_tokens, against the
model's context length (its config.json). Over the limit, it says what each way out would cut; the choice is
the user's, and nothing is cut without it."""

from __future__ import annotations

from dataclasses import dataclass

from launch.model_config import ModelConfigError, load_model_shape


def context_length(model_path: str | None) -> int:
    """The model's context from its config.json (the bundled M3 one when there is no model folder)."""
    try:
        shape = load_model_shape(model_path or None)
    except ModelConfigError:
        shape = load_model_shape(None)
    return shape.max_positions or load_model_shape(None).max_positions


@dataclass(frozen=True)
class Budget:
    limit: int
    system: int
    history: tuple[int, ...]  # tokens of each earlier turn, oldest first
    attachments: tuple[int, ...]
    typed: int
    max_tokens: int

    @property
    def used(self) -> int:
        return self.system + sum(self.history) + sum(self.attachments) + self.typed + self.max_tokens

    @property
    def over(self) -> int:
        """Tokens past the limit (0 when it fits)."""
        return max(0, self.used - self.limit)

    def turns_to_drop(self) -> int | None:
        """The fewest oldest turns whose removal makes it fit; None when dropping all of them is not enough."""
        freed = 0
        for count, tokens in enumerate(self.history):
            if freed >= self.over:
                return count
            freed += tokens
        return len(self.history) if freed >= self.over else None

    def trim_largest_to(self) -> tuple[int, int] | None:
        """(index, tokens to keep) for trimming the largest attachment to fit; None when that cannot suffice."""
        if not self.attachments:
            return None
        index = max(range(len(self.attachments)), key=self.attachments.__getitem__)
        keep = self.attachments[index] - self.over
        return (index, keep) if keep > 0 else None

    def meter(self) -> dict[str, object]:
        return {"used": self.used, "limit": self.limit, "over": self.over,
                "parts": {"system": self.system, "history": sum(self.history),
                          "attachments": sum(self.attachments), "message": self.typed,
                          "max_tokens": self.max_tokens}}
