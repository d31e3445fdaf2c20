"""The simulated engine starts like sglang-kt: its log lines in order, its port closed until uvicorn, /health 503
until the warmup, the model's own config.json when given."""

from __future__ import annotations

import json
import re
import signal
import socket
import time
from pathlib import Path

import httpx

from launch.model_config import BUNDLED_M3_CONFIG, load_model_shape
from launch.presets import tp8_hybrid
from tests.sim_process import free_port, sim_settings, start_sim  # noqa: F401  (fixture)

PREFIX = r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] "
ORDER = (
    r"Init torch distributed begin\.",
    r"Init torch distributed ends\. elapsed=\d+\.\d\d s, mem usage=\d+\.\d\d GB",
    r"Load weight begin\. avail mem=\d+\.\d\d GB",
    r"Load weight end\. elapsed=\d+\.\d\d s, type=MiniMaxM3ForCausalLM, dtype=torch\.bfloat16, avail mem=\d+\.\d\d GB, "
    r"mem usage=\d+\.\d\d GB\.",
    r"KV Cache is allocated\. #tokens: \d+, K size: \d+\.\d\d GB, V size: \d+\.\d\d GB",
    r"Memory pool end\. avail mem=\d+\.\d\d GB",
    r"Capture cuda graph begin\. This can take up to several minutes\. avail mem=\d+\.\d\d GB",
    r"Capture cuda graph end\. Time elapsed: \d+\.\d\d s\. mem usage=\d+\.\d\d GB\. avail mem=\d+\.\d\d GB\.",
    r"max_total_num_tokens=\d+, chunked_prefill_size=4096, max_prefill_tokens=16384, max_running_requests=\d+, "
    r"context_len=1048576, available_gpu_mem=\d+\.\d\d GB",
    r"INFO:     Uvicorn running on http://127\.0\.0\.1:\d+ \(Press CTRL\+C to quit\)",
    r"The server is fired up and ready to roll!",
)


def _stderr_lines(sim: object) -> list[str]:
    return [line for _, line in sim.lines if line.startswith("[")]  # type: ignore[attr-defined]


def _assert_in_order(lines: list[str], patterns: tuple[str, ...]) -> None:
    position = 0
    for pattern in patterns:
        found = next((i for i in range(position, len(lines)) if re.search(PREFIX + pattern, lines[i])), None)
        assert found is not None, f"{pattern!r} missing or out of order in:\n" + "\n".join(lines)
        position = found + 1


def test_startup_logs_the_real_engines_lines_in_order_with_one_kt_line_per_moe_layer(start_sim) -> None:  # noqa: F811
    sim = start_sim(sim_settings(free_port()))
    sim.wait_ready()
    _assert_in_order(_stderr_lines(sim), ORDER)
    kt_line = re.compile(r"\[NativeMoEWrapper Layer (\d+)\] load_experts: [\d.]+ms, .* total: [\d.]+ms$")
    kt_layers = [int(m.group(1)) for _, line in sim.lines if (m := kt_line.match(line))]
    assert kt_layers == list(load_model_shape(None).moe_layer_ids)


def test_the_port_is_closed_until_uvicorn_runs_and_health_is_503_until_the_warmup_ends(start_sim) -> None:  # noqa: F811
    port = free_port()
    sim = start_sim(sim_settings(port), env={"M3UI_SIM_STARTUP_SECONDS": "2.5"})
    refused_while_loading = 0
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        loading = any("Load weight begin" in line for _, line in sim.lines)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            refused_while_loading += loading
            time.sleep(0.01)
    connected_at = time.monotonic()
    seen_at, _ = sim.wait_for_line(r"Uvicorn running on", timeout=2)
    assert seen_at - connected_at < 1.0  # the first accepted connection comes with uvicorn's line
    assert refused_while_loading > 0
    assert httpx.get(f"{sim.url}/health", timeout=2).status_code == 503
    assert not any("fired up" in line for _, line in sim.lines)
    sim.wait_ready()
    assert httpx.get(f"{sim.url}/health", timeout=2).content == b""
    sim.wait_for_line(r"The server is fired up and ready to roll!", timeout=2)


def test_the_tp8_preset_starts_and_each_rank_logs_with_its_tp_prefix(start_sim) -> None:  # noqa: F811
    settings = tp8_hybrid().replace(host="127.0.0.1", port=free_port())
    sim = start_sim(settings)
    sim.wait_ready()
    lines = _stderr_lines(sim)
    for rank in range(8):
        assert any(re.match(rf"^\[[\d :-]+ TP{rank}\] Load weight begin\.", line) for line in lines)
    assert any(re.match(r"^\[[\d :-]+ TP0\] max_total_num_tokens=\d+, chunked_prefill_size=8192", line)
               for line in lines)
    assert any(re.match(r"^\[[\d :-]+\] INFO:     Uvicorn running on", line) for line in lines)


def test_a_model_path_with_its_own_config_json_sets_the_shape_and_context(start_sim, tmp_path: Path) -> None:  # noqa: F811
    raw = json.loads(BUNDLED_M3_CONFIG.read_text())
    text = raw["text_config"]
    text.update(num_hidden_layers=6, max_position_embeddings=4096, moe_layer_freq=[0, 0, 1, 1, 1, 1])
    text["sparse_attention_config"]["sparse_attention_freq"] = [0, 0, 1, 1, 1, 1]
    (tmp_path / "config.json").write_text(json.dumps(raw))
    sim = start_sim(sim_settings(free_port(), model_path=str(tmp_path), kt_weight_path=str(tmp_path)))
    sim.wait_ready()
    kt_lines = [line for _, line in sim.lines if line.startswith("[NativeMoEWrapper")]
    assert [re.search(r"Layer (\d+)", line).group(1) for line in kt_lines] == ["2", "3", "4", "5"]
    assert any("context_len=4096," in line for line in _stderr_lines(sim))
    card = httpx.get(f"{sim.url}/v1/models", timeout=5).json()["data"][0]
    assert card["max_model_len"] == 4096 and card["id"] == "MiniMax-M3" and card["m3ui_simulated"] is True


def test_stopping_the_engine_does_not_wait_for_a_long_stream(start_sim) -> None:  # noqa: F811
    sim = start_sim(sim_settings(free_port()), env={"M3UI_SIM_UNTHROTTLED": "0"})
    sim.wait_ready()
    with httpx.stream("POST", f"{sim.url}/v1/chat/completions", timeout=10,
                      json={"messages": [{"role": "user", "content": "count to 5000"}], "stream": True}) as response:
        next(response.iter_lines())
        started = time.monotonic()
        sim.proc.terminate()
        assert sim.wait_exit(timeout=10) == -signal.SIGTERM  # uvicorn re-raises the signal once shut down
    assert time.monotonic() - started < 5
