"""Built-in prompt mixes for the A/B replay: many conversations over a few topics each.

Two mixes with no topic in common, so a placement recorded on one can be tried on the other. Each prompt
asks for a long answer (the simulated engine counts; a real model writes), so that a replay of one mix
routes well over the 20,000 decode tokens a trustworthy profile needs (issue 13).
"""

from __future__ import annotations

import json
from pathlib import Path

MIX_A_TOPICS = (
    "Roman empire history", "Python asyncio sockets", "Sonnet ocean waves", "Pasta sauce recipes",
    "Linear algebra eigenvalues", "Chess opening theory", "Volcano geology", "Marathon training plans",
)
MIX_B_TOPICS = (
    "Tomato gardening soil", "Baroque music harmony", "Contract law clauses", "Kidney medicine dialysis",
    "Stellar astronomy spectra", "Watercolor painting washes", "Medieval castle architecture", "Coffee roasting",
)
PROMPTS_PER_TOPIC = 3
ANSWER_LENGTH = 500  # the simulated engine counts to this: about 1,000 tokens an answer
MAX_PROMPTS = 1000
MAX_PROMPT_CHARS = 20_000


def builtin_mix(topics: tuple[str, ...] = MIX_A_TOPICS, answer_length: int = ANSWER_LENGTH) -> list[str]:
    """Topic-interleaved prompts: conversation i is about topics[i % len(topics)]."""
    return [f"{topic}: explain it in depth, part {part + 1}, and count to {answer_length}."
            for part in range(PROMPTS_PER_TOPIC) for topic in topics]


def load_prompts(path: Path) -> list[str]:
    """A JSON list of prompt strings, or a text file with one prompt per line (blank lines skipped)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"cannot read prompts from {path}: {error}") from None
    if path.suffix == ".json":
        try:
            prompts = json.loads(text)
        except ValueError as error:
            raise ValueError(f"{path}: not JSON ({error})") from None
        if not isinstance(prompts, list) or not all(isinstance(p, str) for p in prompts):
            raise ValueError(f"{path}: expected a JSON list of strings")
    else:
        prompts = text.splitlines()
    prompts = [p.strip() for p in prompts if p.strip()]
    if not prompts:
        raise ValueError(f"{path}: no prompts")
    if len(prompts) > MAX_PROMPTS or max(map(len, prompts)) > MAX_PROMPT_CHARS:
        raise ValueError(f"{path}: at most {MAX_PROMPTS} prompts of {MAX_PROMPT_CHARS} characters each")
    return prompts
