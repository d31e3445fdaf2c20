"""`python -m launch placement plan|ab` as real processes, and the A/B on real simulated-engine processes:
the frequency relaunch places exactly what the engine's rules (real torch) give for the saved profile."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest
import torch

from launch.model_config import load_model_shape
from launch.placement import gpu_expert_mask
from launch.placement_plan.ab import run_ab
from launch.placement_plan.predict import Hardware
from launch.presets import single_gpu, with_expert_monitoring
from launch.sim.recorder import create_recorder
from launch.sim.routing import RoutingModel
from tests.sim_process import ROOT

M3 = load_model_shape(None)
SETTINGS = single_gpu().replace(kt_weight_path="/weights")
ENV = {"GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1"}


def cli(*args: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "launch", "placement", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={**ENV, "PATH": "/usr/bin:/bin", "M3UI_DATA_DIR": str(data_dir)})


@pytest.fixture(scope="module")
def dumps(tmp_path_factory) -> list[Path]:
    folder = tmp_path_factory.mktemp("recorder")
    mask = gpu_expert_mask(M3, SETTINGS)
    recorder = create_recorder(with_expert_monitoring(SETTINGS, -1), M3, mask, folder)
    routing = RoutingModel(M3, mask)
    recorder.start()
    written = []
    for topic in ("roman history", "python sockets", "ocean sonnet", "pasta sauce") * 3:
        recorder.record_pass(routing.route(topic, 2000, uuid.uuid4().hex).counts)
        written.extend(recorder.dump())
    return written


def test_plan_json_takes_n_from_the_runs_masks_and_saves_the_profile_it_names(dumps, tmp_path):
    proc = cli("plan", *(f"--dump={d}" for d in dumps), "--json", data_dir=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["gpu_experts"] == 4 and data["recorded_tokens"] == 12 * 2000
    assert data["predicted"]["frequency"] > data["predicted"]["uniform"] == pytest.approx(4 / 128, abs=0.004)
    profile = Path(data["flags"][data["flags"].index("--init-expert-location") + 1])
    assert profile.parent == tmp_path / "placement" and profile.suffix == ".pt"
    saved = torch.load(profile, weights_only=True)["logical_count"]
    assert saved.shape == (1, 60, 128) and int(saved.sum()) == 12 * 2000 * 4 * 57


def test_plan_text_at_another_n_prints_the_curve_the_recommendation_and_the_flags(dumps, tmp_path):
    save = tmp_path / "mine.pt"
    proc = cli("plan", "--dump", *(str(d) for d in dumps if "recorder_" in d.name), "--gpu-experts", "16",
               "--save", str(save), data_dir=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "curve (GPU experts per layer" in proc.stdout and "Relaunch with frequency at 16" in proc.stdout
    assert f"--init-expert-location {save} --kt-num-gpu-experts 16" in proc.stdout
    assert save.is_file()


@pytest.mark.parametrize(("args", "message"), [
    (["plan", "--dump", "/nonexistent/x.pt", "--gpu-experts", "4"], "no such file"),
    (["plan", "--dump", "DUMP"], "--gpu-experts N"),
    (["plan", "--dump", "DUMP", "--gpu-experts", "999"], "must be 0..128"),
    (["ab", "--engine", "sglang", "--preset", "single-gpu"], "simulated engine only"),
])
def test_bad_input_is_refused_with_a_reason_before_anything_starts(args, message, dumps, tmp_path):
    stat = next(d for d in dumps if "recorder_" in d.name)
    proc = cli(*(str(stat) if a == "DUMP" else a for a in args), data_dir=tmp_path)
    assert proc.returncode == 2 and message in proc.stderr
    assert not (tmp_path / "placement").exists()


def test_ab_on_real_simulated_engines_relaunches_with_the_rules_placement_and_hits_more(tmp_path):
    prompts = [f"{topic}: count to 150." for topic in ("Roman empire history", "Python asyncio sockets",
                                                         "Sonnet ocean waves", "Pasta sauce recipes")] * 2
    result = run_ab(SETTINGS, M3, prompts, None, tmp_path, Hardware(1, 96e9, 0.85))
    freq = torch.load(result.profile, weights_only=True)["logical_count"].sum(dim=0).float()
    _, top = torch.topk(freq.view(-1), k=4 * 57, largest=True, sorted=False)
    real = np.zeros(60 * 128, dtype=bool)
    real[top.numpy()] = True
    moe = list(M3.moe_layer_ids)
    assert np.array_equal(result.after.recording.recorded_mask[moe], real.reshape(60, 128)[moe])
    assert result.after.hit_rate > result.before.hit_rate
    assert result.after.decode_tps > result.before.decode_tps
    assert result.before.tokens == result.after.tokens > 8 * 150
    assert not list(tmp_path.rglob("expert_distribution_recorder_*.pt"))  # read, then removed


def test_a_zero_stride_dump_is_refused_in_one_line_before_anything_is_planned(tmp_path):
    """507 bytes of torch.save that pose as a 2000-pass recording (one int expanded with stride 0)."""
    dump = tmp_path / "expert_distribution_recorder_1.pt"
    torch.save({"logical_count": torch.ones(1, 1, 1, dtype=torch.int32).expand(2000, 60, 128)}, dump)
    proc = cli("plan", "--dump", str(dump), "--gpu-experts", "4", data_dir=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "shows more elements than its storage of 1 holds" in proc.stderr
    assert not (tmp_path / "placement").exists()
