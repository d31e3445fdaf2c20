"""m3ui's simulated MiniMax-M3 engine: `python -m launch.sim <sglang-kt flags>`, a real HTTP server that follows
docs/ENGINE_CONTRACT.md (see __main__.py for the flow).

Start: args (command line) → config (simulated hardware, M3UI_SIM_*) → plan (sizing) → startup (log lines,
failures) → engine (scheduler, metrics, routing, recorder) → app + server (HTTP, warmup).
Chat: request → answers (scripted reply; arithmetic, tool_intent → tool_arguments, with units, time_zones and
prompt_values reading the prompt) → m3_text (M3's raw text) → tokens →
scheduler (pacing, routing, recorder) → responder (reasoning_split, tool_stream/json_tool_stream → chunks).
"""
