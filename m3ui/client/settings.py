"""What a chat request asks for: thinking mode and sampling settings, validated before sending."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal, get_args

# MiniMax-M3's chat_template_kwargs.thinking_mode. The engine silently treats any other string as
# "adaptive", so a typo would go unnoticed: we refuse it here instead.
ThinkingMode = Literal["enabled", "disabled", "adaptive"]
THINKING_MODES: tuple[ThinkingMode, ...] = get_args(ThinkingMode)


class SettingsError(ValueError):
    """A generation setting is invalid; raised before anything is sent."""


def validate_thinking_mode(value: str) -> ThinkingMode:
    if value not in THINKING_MODES:
        raise SettingsError(f"thinking mode must be one of {', '.join(THINKING_MODES)}; got {value!r}")
    return value


@dataclass(frozen=True)
class GenerationSettings:
    """Sampling settings; defaults are the reference deployment's chat settings (temperature 0.6, top-p 0.95)."""

    thinking_mode: ThinkingMode = "adaptive"
    temperature: float = 0.6
    top_p: float = 0.95
    max_tokens: int = 4096
    # Engine-specific samplers, sent through extra_body only when set.
    top_k: int | None = None
    min_p: float | None = None
    repetition_penalty: float | None = None
    seed: int | None = None
    # Longest silence (no byte from the engine) before the answer is given up as stalled; long prefills of big
    # prompts are silent until the first token, so the user can raise it.
    stall_seconds: float = 60.0

    def __post_init__(self) -> None:
        validate_thinking_mode(self.thinking_mode)
        _check(0.0 <= self.temperature <= 2.0, f"temperature must be in [0, 2]; got {self.temperature}")
        _check(0.0 < self.top_p <= 1.0, f"top_p must be in (0, 1]; got {self.top_p}")
        _check(self.max_tokens >= 1, f"max_tokens must be at least 1; got {self.max_tokens}")
        _check(self.top_k is None or self.top_k >= 1, f"top_k must be at least 1; got {self.top_k}")
        _check(self.min_p is None or 0.0 <= self.min_p <= 1.0, f"min_p must be in [0, 1]; got {self.min_p}")
        _check(
            self.repetition_penalty is None or self.repetition_penalty > 0,
            f"repetition_penalty must be positive; got {self.repetition_penalty}",
        )
        _check(
            math.isfinite(self.stall_seconds) and MIN_STALL_SECONDS <= self.stall_seconds <= MAX_STALL_SECONDS,
            f"stall_seconds must be in [{MIN_STALL_SECONDS:g}, {MAX_STALL_SECONDS:g}]; got {self.stall_seconds}",
        )

    def greedy(self) -> GenerationSettings:
        """The reference's benchmark preset: same settings at temperature 0."""
        return replace(self, temperature=GREEDY_TEMPERATURE)


GREEDY_TEMPERATURE = 0.0
# Bounds of the stall limit: below a second a busy engine looks stalled; beyond an hour nobody is waiting.
MIN_STALL_SECONDS = 1.0
MAX_STALL_SECONDS = 3600.0


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise SettingsError(message)


@dataclass(frozen=True)
class EndpointConfig:
    """Where the OpenAI-compatible server is and how patiently to talk to it."""

    base_url: str = "http://127.0.0.1:8000/v1"
    model: str = "MiniMax-M3"
    api_key: str = "EMPTY"
    connect_timeout_s: float = 5.0  # the wait for the next byte is each request's stall limit (its settings)
    # Set when the server runs without --reasoning-parser: <mm:think>..</mm:think> then arrive in content.
    reasoning_in_content: bool = False
