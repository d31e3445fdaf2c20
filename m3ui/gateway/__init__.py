"""The gateway: the engine's OpenAI and Anthropic APIs (/v1/...) on the app's own port, for coding agents and
scripts, behind per-person API keys, metered in the same ledger as the browser and limited per key.

No Gradio here. `Gateway` (gateway.py) is the route; the rest are its parts: who is calling (callers.py), the
per-key limits (limits.py), the request body checked and adjusted (request_body.py), the response streamed
through with its usage read (usage_stream.py), refusals in each API's own shape (api_errors.py).
"""
