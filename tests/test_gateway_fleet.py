"""Both SDKs through the gateway to a 2-worker fleet (its real sglang-router in front of two simulated engines):
streamed chat with tools (openai) and streamed messages with tool_use (anthropic), counted for the key's person."""

from __future__ import annotations

import time
from pathlib import Path

import anthropic
import httpx
import openai
import pytest

from tests.fleet_checks import healthy_workers
from tests.fleet_process import write_fleet_file
from tests.gateway_app import gateway_app
from tests.test_gateway_sdks import WEATHER_ANTHROPIC, WEATHER_OPENAI

pytest.importorskip("sglang_router")


def test_both_sdks_stream_tools_through_the_gateway_to_a_fleet(tmp_path: Path) -> None:
    path, router = write_fleet_file(tmp_path)
    with gateway_app(tmp_path, "--fleet", str(path), ready=False) as gw:
        deadline = time.monotonic() + 120
        # both workers healthy behind the router, and the app has seen its fleet come ready (until then the
        # gateway answers 503 with retry-after, as it should)
        while len(healthy_workers(router)) < 2 or httpx.get(
                gw.base_url + "/models", headers={"authorization": f"Bearer {gw.keys['bob']}"},
                timeout=10).status_code != 200:
            assert time.monotonic() < deadline, gw.app.log()[-3000:]
            time.sleep(0.3)
        with openai.OpenAI(base_url=gw.base_url, api_key=gw.keys["bob"], max_retries=0) as client:
            names, arguments = [], ""
            for chunk in client.chat.completions.create(
                    model="MiniMax-M3", stream=True, tools=[WEATHER_OPENAI], max_tokens=400,
                    messages=[{"role": "user", "content": "What is the weather in Paris?"}]):
                for call in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
                    names += [call.function.name] if call.function.name else []
                    arguments += call.function.arguments or ""
            assert names == ["get_weather"] and '"Paris"' in arguments
        with anthropic.Anthropic(base_url=gw.app.url, api_key=gw.keys["carol"], max_retries=0) as client, \
                client.messages.stream(model="MiniMax-M3", max_tokens=400, tools=[WEATHER_ANTHROPIC],
                                       messages=[{"role": "user", "content": "What is the weather in Paris?"}]) as s:
            final = s.get_final_message()
        calls = [block for block in final.content if block.type == "tool_use"]
        assert final.stop_reason == "tool_use" and calls[0].input == {"city": "Paris"}
        assert gw.usage_after("bob", 1).requests == 1
        assert gw.usage_after("carol", 1).completion_tokens == final.usage.output_tokens
