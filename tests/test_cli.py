"""`python -m launch ...` as users and other tools run it: output and exit codes, and `serve` end to end."""

import json
import os
import signal
import subprocess
import sys
import time

import httpx
import numpy as np
import openai
import psutil

from launch.command import build_command
from launch.presets import preset
from tests.app_process import FAST_SIM_ENV, ROOT, free_port
from torchzip.reader import load_tensors


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "launch", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, **(env or {})})


def test_command_prints_the_preset_with_overrides():
    out = _cli("command", "--preset", "single-gpu", "--model-path", "/m", "--set", "kt_num_gpu_experts=6")
    assert out.returncode == 0, out.stderr
    expected = build_command(preset("single-gpu", "/m").replace(kt_num_gpu_experts=6)).shell_text()
    assert out.stdout.strip() == expected


def test_bad_set_is_a_usage_error_naming_the_field():
    out = _cli("command", "--preset", "single-gpu", "--set", "kt_num_gpu_experts=many")
    assert out.returncode == 2 and "--kt-num-gpu-experts" in out.stderr and "many" in out.stderr


def test_check_exits_non_zero_on_errors_and_zero_when_clean(tmp_path):
    port = str(free_port())
    bad = _cli("check", "--preset", "single-gpu", "--engine", "sim", "--set", "kt_num_gpu_experts=100",
               "--set", f"port={port}")
    assert bad.returncode == 1 and "CUDA out of memory while loading" in bad.stdout
    good = _cli("check", "--preset", "single-gpu", "--engine", "sim", "--set", "host=127.0.0.1",
                "--set", f"port={port}")
    assert good.returncode == 0, good.stdout


def test_doctor_and_advise_print_their_reports():
    doctor = _cli("doctor")
    assert doctor.returncode == 0 and "CPU:" in doctor.stdout and "RAM:" in doctor.stdout
    advise = _cli("advise", "--tp", "8", "--gpu-mem-gb", "96", "--mem-fraction", "0.55")
    assert advise.returncode == 0, advise.stderr
    assert "--kt-num-gpu-experts 60" in advise.stdout and "largest --kt-num-gpu-experts that fits" in advise.stdout


def test_serve_sim_end_to_end_chat_tools_recorder_and_clean_stop(tmp_path):
    port = free_port()
    run_root = tmp_path / "runs-root"
    proc = subprocess.Popen(
        [sys.executable, "-m", "launch", "serve", "--preset", "single-gpu", "--engine", "sim",
         "--set", "host=127.0.0.1", "--set", f"port={port}", "--set", "expert_distribution_recorder_mode=stat",
         "--set", "record_kt_gpu_expert_distribution=true", "--run-root", str(run_root)],
        cwd=ROOT, env={**os.environ, **FAST_SIM_ENV}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 60
        while not any(line.startswith("[") and "ready: ready" in line for line in lines):
            assert time.monotonic() < deadline and proc.poll() is None, "".join(lines)
            lines.append(proc.stdout.readline())
        phases = "".join(lines)
        assert "loading CPU experts" in phases
        engine = [p for p in psutil.Process(proc.pid).children(recursive=True)]
        assert engine

        base = f"http://127.0.0.1:{port}"
        # As in sglang, a recorder mode alone records nothing until asked to start.
        assert httpx.post(f"{base}/start_expert_distribution_record", timeout=30).status_code == 200
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none", max_retries=0)
        thinking = {"chat_template_kwargs": {"thinking_mode": "enabled"}, "skip_special_tokens": False}
        reasoning, content = "", ""
        for chunk in client.chat.completions.create(
                model="MiniMax-M3", stream=True, extra_body=thinking,
                messages=[{"role": "user", "content": "Solve step by step: 17 * 23"}]):
            if chunk.choices:
                delta = chunk.choices[0].delta
                reasoning += getattr(delta, "reasoning_content", None) or ""
                content += delta.content or ""
        assert reasoning and "391" in content

        tools = [{"type": "function", "function": {
            "name": "get_weather", "description": "Weather for a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
        ask = [{"role": "user", "content": "What's the weather in Shanghai?"}]
        first = client.chat.completions.create(model="MiniMax-M3", messages=ask, tools=tools, extra_body=thinking)
        (call,) = first.choices[0].message.tool_calls
        assert call.function.name == "get_weather" and json.loads(call.function.arguments) == {"city": "Shanghai"}
        ask += [first.choices[0].message.model_dump(exclude_none=True),
                {"role": "tool", "tool_call_id": call.id, "content": "Sunny, 24 C"}]
        final = client.chat.completions.create(model="MiniMax-M3", messages=ask, tools=tools, extra_body=thinking)
        assert "24" in final.choices[0].message.content

        assert httpx.post(f"{base}/dump_expert_distribution_record", timeout=30).status_code == 200
        (stat,) = run_root.glob("runs/*/recorder/expert_distribution_recorder_*.pt")
        (masks,) = run_root.glob("runs/*/recorder/gpu_expert_distribution_*.pt")
        counts = load_tensors(stat)["logical_count"]
        assert counts.dtype == np.int32 and counts.shape[1:] == (60, 128) and counts.sum() > 0
        resident = load_tensors(masks)["gpu_expert_masks"].any(axis=0)
        assert resident[3:, :4].all() and not resident[3:, 4:].any()  # uniform: experts 0..3 of each MoE layer
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    gone, alive = psutil.wait_procs(engine, timeout=15)
    assert not alive, "serve left the engine running"
    assert proc.returncode == 0


def _read_until(proc: subprocess.Popen, lines: list[str], text: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not any(text in line for line in lines):
        assert time.monotonic() < deadline and proc.poll() is None, "".join(lines)
        lines.append(proc.stdout.readline())


def test_serve_auto_restart_relaunches_an_engine_that_died(tmp_path):
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "launch", "serve", "--preset", "single-gpu", "--engine", "sim", "--auto-restart",
         "--set", "host=127.0.0.1", "--set", f"port={port}", "--run-root", str(tmp_path / "runs-root")],
        cwd=ROOT, env={**os.environ, **FAST_SIM_ENV}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    engines: list[psutil.Process] = []
    try:
        _read_until(proc, lines, "ready: ready")
        (engine,) = psutil.Process(proc.pid).children()
        engine.kill()
        _read_until(proc, lines, "auto-restart attempt 1 of 3 in 5 s")
        del lines[:]
        _read_until(proc, lines, "ready: ready")
        engines = psutil.Process(proc.pid).children(recursive=True)
        assert engines and engine.pid not in [e.pid for e in engines]
        assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=10).status_code == 200
        assert proc.poll() is None, "serve stays up across the restart"
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    assert not psutil.wait_procs(engines, timeout=15)[1], "serve left the engine running"
    assert proc.returncode == 0
