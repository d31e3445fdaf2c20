"""The HTTP surface besides chat: auth, models, server info, loads, metrics, errors, expert recorder routes."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from launch.presets import with_expert_monitoring
from launch.settings import setting_fields
from tests.sim_process import SimProcess, free_port, running_sim, sim_settings
from tests.sim_sse import chat, stream_chat
from torchzip.reader import load_tensors

KEY = "s3cret-key"
AUTH = {"Authorization": f"Bearer {KEY}"}


@pytest.fixture(scope="module")
def recorder_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("recorder")


@pytest.fixture(scope="module")
def sim(recorder_dir: Path) -> Iterator[SimProcess]:
    settings = with_expert_monitoring(sim_settings(free_port(), api_key=KEY))
    with running_sim(settings, {"SGLANG_EXPERT_DISTRIBUTION_RECORDER_DIR": str(recorder_dir)}) as process:
        yield process


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": KEY}])
def test_the_api_key_guards_every_route_but_health_and_metrics(sim: SimProcess, headers: dict[str, str]) -> None:
    for path in ("/v1/models", "/server_info", "/v1/loads", "/model_info"):
        response = httpx.get(sim.url + path, headers=headers, timeout=5)
        assert (response.status_code, response.json()) == (401, {"error": "Unauthorized"})
    assert chat(sim.url, {"messages": [{"role": "user", "content": "hi"}]}, headers).status_code == 401
    assert httpx.get(f"{sim.url}/health", headers=headers, timeout=5).status_code == 200
    assert httpx.get(f"{sim.url}/health_generate", headers=headers, timeout=5).status_code == 200
    assert httpx.get(f"{sim.url}/metrics", headers=headers, timeout=5).status_code == 200


def test_v1_models_lists_the_served_name_owned_by_sglang_and_marked_simulated(sim: SimProcess) -> None:
    body = httpx.get(f"{sim.url}/v1/models", headers=AUTH, timeout=5).json()
    assert body["object"] == "list"
    (card,) = body["data"]
    assert set(card) == {"id", "object", "created", "owned_by", "root", "parent", "max_model_len", "m3ui_simulated"}
    assert (card["id"], card["owned_by"], card["root"], card["parent"]) == ("MiniMax-M3", "sglang", "MiniMax-M3", None)
    assert card["max_model_len"] == 1048576 and card["m3ui_simulated"] is True
    missing = httpx.get(f"{sim.url}/v1/models/other", headers=AUTH, timeout=5)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "model_not_found"


@pytest.mark.parametrize("path", ["/server_info", "/get_server_info"])
def test_server_info_has_every_server_arg_the_status_and_memory_and_says_it_is_simulated(
        sim: SimProcess, path: str) -> None:
    info = httpx.get(sim.url + path, headers=AUTH, timeout=5).json()
    assert {f.name for f in setting_fields()} <= set(info)
    assert info["kt_num_gpu_experts"] == 4 and info["tp_size"] == 1 and info["mem_fraction_static"] == 0.85
    assert info["expert_distribution_recorder_mode"] == "stat" and info["record_kt_gpu_expert_distribution"] is True
    assert info["status"] == "ready" and info["max_total_num_tokens"] > 100_000
    assert info["max_req_input_len"] == info["max_total_num_tokens"] - 6
    state = info["internal_states"][0]
    assert set(state["memory_usage"]) == {"weight", "kvcache", "token_capacity", "graph"}
    assert state["memory_usage"]["token_capacity"] == info["max_total_num_tokens"]
    assert isinstance(state["last_gen_throughput"], float)
    assert info["version"] == "0.7.2-m3ui-sim" and info["simulated"] is True


def test_v1_loads_reports_one_dp_rank_with_memory_and_an_aggregate(sim: SimProcess) -> None:
    body = httpx.get(f"{sim.url}/v1/loads", headers=AUTH, timeout=5).json()
    assert set(body) == {"timestamp", "version", "dp_rank_count", "loads", "aggregate"}
    (load,) = body["loads"]
    assert {"dp_rank", "num_running_reqs", "num_waiting_reqs", "num_used_tokens", "max_total_num_tokens",
            "token_usage", "gen_throughput", "cache_hit_rate", "utilization", "max_running_requests",
            "memory", "num_total_reqs"} <= set(load)
    assert set(load["memory"]) == {"weight_gb", "kv_cache_gb", "graph_gb", "token_capacity"}
    assert load["num_running_reqs"] == 0 and body["aggregate"]["total_reqs"] == 0


def test_metrics_use_sglangs_names_and_labels(sim: SimProcess) -> None:
    assert chat(sim.url, {"messages": [{"role": "user", "content": "What is 6 * 7?"}]}, AUTH).status_code == 200
    text = httpx.get(f"{sim.url}/metrics", timeout=5).text
    for gauge in ("num_running_reqs", "num_queue_reqs", "num_used_tokens", "token_usage", "gen_throughput",
                  "cache_hit_rate", "max_total_num_tokens", "utilization"):
        assert re.search(rf'^sglang:{gauge}\{{.*model_name="MiniMax-M3".*tp_rank="0".*\}} ', text, re.M), gauge
    for counter in ("prompt_tokens_total", "generation_tokens_total", "num_requests_total",
                    "num_aborted_requests_total"):
        assert re.search(rf'^sglang:{counter}\{{model_name="MiniMax-M3"\}} \d', text, re.M), counter
    for histogram in ("time_to_first_token_seconds", "inter_token_latency_seconds", "e2e_request_latency_seconds",
                      "queue_time_seconds"):
        assert f"sglang:{histogram}_bucket{{" in text
    assert "_created" not in text


@pytest.mark.parametrize(("body", "message"), [
    ({"messages": []}, "Messages cannot be empty."),
    ({"messages": [{"role": "user", "content": "hi"}], "tool_choice": "required"},
     "Tools cannot be empty if tool choice is set to required."),
    ({"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {"name": "a"}}],
      "tool_choice": {"type": "function", "function": {"name": "b"}}}, "Tool 'b' not found in tools list."),
])
def test_request_errors_are_400_with_sglangs_error_body(sim: SimProcess, body: dict, message: str) -> None:
    response = chat(sim.url, body, AUTH)
    assert response.status_code == 400
    assert response.json() == {"object": "error", "message": message, "type": "BadRequestError", "param": None,
                               "code": 400}


def test_schema_errors_and_wrong_content_types_are_400_not_422(sim: SimProcess) -> None:
    response = chat(sim.url, {"messages": "not a list"}, AUTH)
    assert response.status_code == 400 and response.json()["type"] == "Bad Request"
    plain = httpx.post(f"{sim.url}/v1/chat/completions", content=b"{}", timeout=5,
                       headers={**AUTH, "Content-Type": "text/plain"})
    assert plain.status_code == 400 and "Only 'application/json' is allowed" in plain.json()["message"]


def test_a_json_array_body_is_a_500_as_sglangs_own_validator_crashes_on_it(sim: SimProcess) -> None:
    # protocol.py's set_tool_choice_default calls `.get` on the body: an AttributeError, not a 400.
    response = httpx.post(f"{sim.url}/v1/chat/completions", content=b'[{"role": "user", "content": "hi"}]',
                          headers={**AUTH, "Content-Type": "application/json"}, timeout=5)
    assert (response.status_code, response.text) == (500, "Internal Server Error")
    assert chat(sim.url, {"messages": [{"role": "user", "content": "hi"}]}, AUTH).status_code == 200


def test_max_tokens_beyond_the_context_fails_in_the_tokenizer_manager_without_context_length(sim: SimProcess) -> None:
    # No --context-length: serving_chat does not check max_tokens; the tokenizer manager refuses input + max_tokens.
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2_000_000}
    expected = re.compile(r"Requested token count exceeds the model's maximum context length of 1048576 tokens\. "
                          r"You requested a total of (\d+) tokens: (\d+) tokens from the input messages and "
                          r"2000000 tokens for the completion\. Please reduce the number of tokens in the input "
                          r"messages or the completion to fit within the limit\.")
    response = chat(sim.url, body, AUTH)
    assert response.status_code == 400
    match = expected.fullmatch(response.json()["message"])
    assert match and int(match[1]) == int(match[2]) + 2_000_000
    streamed = stream_chat(sim.url, body, AUTH)  # 200, then the error event, then [DONE]
    assert streamed.events[-1] == "data: [DONE]\n\n" and len(streamed.events) == 2
    assert expected.fullmatch(streamed.error["message"]) and streamed.error["code"] == 400


def test_the_recorder_routes_answer_text_and_dump_what_the_chat_routed(sim: SimProcess, recorder_dir: Path) -> None:
    start = httpx.post(f"{sim.url}/start_expert_distribution_record", headers=AUTH, timeout=5)
    assert (start.status_code, start.text) == (200, "Start recording the expert distribution.\n")
    assert chat(sim.url, {"messages": [{"role": "user", "content": "count to 40"}]}, AUTH).status_code == 200
    assert httpx.post(f"{sim.url}/stop_expert_distribution_record", headers=AUTH, timeout=5).text == \
        "Stop recording the expert distribution.\n"
    assert httpx.get(f"{sim.url}/dump_expert_distribution_record", headers=AUTH, timeout=30).text == \
        "Dump expert distribution record.\n"
    (stat_file,) = recorder_dir.glob("expert_distribution_recorder_*.pt")
    (mask_file,) = recorder_dir.glob("gpu_expert_distribution_*.pt")
    counts = load_tensors(stat_file)["logical_count"]
    assert counts.shape == (1000, 60, 128) and counts[:, :3].sum() == 0
    assert counts.sum() >= 40 * 4 * 57  # every decoded token routed top-4 in each MoE layer
    masks = load_tensors(mask_file)["gpu_expert_masks"]
    assert masks.shape == (1000, 60, 128)
    assert httpx.post(f"{sim.url}/start_expert_distribution_record", timeout=5).status_code == 401
