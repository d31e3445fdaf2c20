"""Copy-paste settings that point coding agents and SDKs at this m3ui's gateway (the Connect page shows them filled
in with this server's URL and model, docs/GATEWAY.md explains them, tests run the SDK ones).

`server` is the app's own URL as the person reaches it (no trailing slash, no /v1); `key` is their API key or a
placeholder. Every value is quoted for the format it goes into (shell, JSON, TOML, YAML, Python).
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass

KEY_PLACEHOLDER = "YOUR_M3UI_KEY"


@dataclass(frozen=True)
class ClientSetting:
    client: str  # as the page's heading says it
    where: str  # what to do with the text: which file or which settings field
    language: str  # for the code block: bash, json, toml, yaml, python
    text: str


def _toml(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def client_settings(server: str, model: str, key: str = KEY_PLACEHOLDER) -> list[ClientSetting]:
    api = f"{server}/v1"
    q = shlex.quote
    hello = {"model": model, "stream": True, "messages": [{"role": "user", "content": "Hello"}]}
    return [
        ClientSetting("Claude Code", "Environment variables, then run `claude` (Anthropic API, /v1/messages)", "bash",
                      f"export ANTHROPIC_BASE_URL={q(server)}\nexport ANTHROPIC_AUTH_TOKEN={q(key)}\n"
                      f"export ANTHROPIC_MODEL={q(model)}\nexport ANTHROPIC_SMALL_FAST_MODEL={q(model)}\nclaude"),
        ClientSetting("OpenCode", "opencode.json in the project (or ~/.config/opencode/opencode.json)", "json",
                      json.dumps({"$schema": "https://opencode.ai/config.json", "provider": {"m3ui": {
                          "npm": "@ai-sdk/openai-compatible", "name": "m3ui",
                          "options": {"baseURL": api, "apiKey": key},
                          "models": {model: {"name": model, "tools": True}}}}, "model": f"m3ui/{model}"}, indent=2)),
        ClientSetting("Codex CLI", "~/.codex/config.toml, with the key in M3UI_API_KEY (export M3UI_API_KEY=...)",
                      "toml",
                      f'model = {_toml(model)}\nmodel_provider = "m3ui"\n\n[model_providers.m3ui]\nname = "m3ui"\n'
                      f'base_url = {_toml(api)}\nenv_key = "M3UI_API_KEY"\nwire_api = "chat"'),
        ClientSetting("Continue", "~/.continue/config.yaml", "yaml",
                      f"name: m3ui\nversion: 1.0.0\nschema: v1\nmodels:\n  - name: {json.dumps(model)}\n"
                      f"    provider: openai\n    model: {json.dumps(model)}\n    apiBase: {json.dumps(api)}\n"
                      f"    apiKey: {json.dumps(key)}\n    roles: [chat, edit, apply]"),
        ClientSetting("Open WebUI", "Admin Settings > Connections > OpenAI API: add a connection (or these "
                      "environment variables of its container)", "bash",
                      f"OPENAI_API_BASE_URL={q(api)}\nOPENAI_API_KEY={q(key)}"),
        ClientSetting("curl", "A streamed chat completion from a shell", "bash",
                      f"curl -N {q(api + '/chat/completions')} \\\n  -H {q('Authorization: Bearer ' + key)} \\\n"
                      f"  -H 'Content-Type: application/json' \\\n  -d {q(json.dumps(hello))}"),
        ClientSetting("Python: openai", "pip install openai", "python",
                      f"from openai import OpenAI\n\nclient = OpenAI(base_url={api!r}, api_key={key!r})\n"
                      f"stream = client.chat.completions.create(model={model!r}, stream=True,\n"
                      "    messages=[{'role': 'user', 'content': 'Hello'}])\n"
                      "for chunk in stream:\n    if chunk.choices:\n"
                      "        print(chunk.choices[0].delta.content or '', end='', flush=True)\nprint()"),
        ClientSetting("Python: anthropic", "pip install anthropic", "python",
                      f"import anthropic\n\nclient = anthropic.Anthropic(base_url={server!r}, api_key={key!r})\n"
                      f"with client.messages.stream(model={model!r}, max_tokens=1024,\n"
                      "        messages=[{'role': 'user', 'content': 'Hello'}]) as stream:\n"
                      "    for text in stream.text_stream:\n        print(text, end='', flush=True)\nprint()"),
    ]
