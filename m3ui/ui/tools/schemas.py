"""The tool schemas a send would offer the model, as the Tools tab shows them."""

from __future__ import annotations

import json

from m3ui.chat_session import selected_registry


def schemas_json(selected: list[str], specs: tuple[str, ...]) -> str:
    """Exactly what a send would offer the model: the selected tools' OpenAI schemas."""
    return json.dumps(selected_registry(selected, specs).openai_tools(), indent=2, ensure_ascii=False)
