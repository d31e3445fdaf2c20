"""The gateway: the engine's OpenAI and Anthropic APIs (/v1/...) on the app's own port, for coding agents and
scripts, behind per-person API keys, metered in the same ledger as the browser and limited per key.

No Gradio here. `Gateway` (gateway.py) serves /v1/...; `GatewayLayer` (mount.py) puts it among the app's HTTP
layers, inside the Host guard, with its own Origin check and CORS; setup.py builds it for an app. Its parts: who is
calling (callers.py), the per-key limits (limits.py), the request body checked and adjusted (request_body.py), the
response streamed through with its usage read (usage_stream.py), refusals in each API's own shape (api_errors.py),
and the client settings the Connect tab and docs/GATEWAY.md show (client_settings.py).
"""
