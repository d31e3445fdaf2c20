"""Presets render byte-for-byte as the reference deployment's commands; argv is literal, never a shell string."""

import re
import shlex
from pathlib import Path

from launch.command import RECORDER_DIR_ENV, Engine, build_command, masked_argv
from launch.presets import preset, with_expert_monitoring

SEED = Path(__file__).resolve().parent / "data" / "seed_presets.md"


def _seed_tp8() -> str:
    text = SEED.read_text()
    return re.search(r"```\n(python -m sglang\.launch_server.*?)\n```", text, re.S).group(1)


def _seed_single() -> str:
    """The seed states the single-GPU command as the TP8 one with the values of its table changed."""
    out = _seed_tp8()
    changes = re.findall(r"^\| `(--[\w-]+)` \| (\S+) \|$", SEED.read_text(), re.M)
    assert len(changes) == 4
    for flag, value in changes:
        out, n = re.subn(rf"({flag}) \S+", rf"\1 {value}", out)
        assert n == 1
    return out


def test_tp8_preset_renders_as_the_seed_command():
    assert build_command(preset("tp8-hybrid")).shell_text() == _seed_tp8()


def test_single_gpu_preset_renders_as_the_seed_command():
    assert build_command(preset("single-gpu")).shell_text() == _seed_single()


def test_seed_paths_are_substituted():
    text = build_command(preset("single-gpu", "/data/M3 model")).shell_text()
    assert text == _seed_single().replace("/path/to/MiniMax-M3-MXFP8", "'/data/M3 model'")


def test_rendering_is_the_argv_that_runs():
    s = preset("tp8-hybrid", "/m; rm -rf /").replace(served_model_name="$(whoami)", api_key="a'b\"c")
    cmd = build_command(s, Engine("sglang", "/venv/bin/python"))
    assert cmd.argv[:3] == ("/venv/bin/python", "-m", "sglang.launch_server")
    assert "/m; rm -rf /" in cmd.argv and "$(whoami)" in cmd.argv and "a'b\"c" in cmd.argv
    shown = cmd.shell_text()
    assert tuple(shlex.split(shown.replace("\\\n", " "))) == tuple(masked_argv(cmd.argv))  # all but the key
    assert "a'b" not in shown and "--api-key '********'" in shown


def test_sim_engine_runs_the_same_flags_under_this_python():
    s = preset("single-gpu")
    real, sim = build_command(s), build_command(s, Engine("sim"))
    assert sim.argv[1:3] == ("-m", "launch.sim")
    assert sim.argv[3:] == real.argv[3:]


def test_recorder_folder_goes_to_the_run_folder(tmp_path):
    cmd = build_command(with_expert_monitoring(preset("single-gpu")), run_dir=tmp_path)
    assert dict(cmd.env) == {RECORDER_DIR_ENV: str(tmp_path / "recorder")}
    assert "--expert-distribution-recorder-mode" in cmd.argv
    assert "--record-kt-gpu-expert-distribution" in cmd.argv
    assert cmd.shell_text().startswith(f"{RECORDER_DIR_ENV}={tmp_path / 'recorder'} python -m")


def test_extra_args_are_split_like_a_shell_but_never_run_by_one():
    cmd = build_command(preset("single-gpu").replace(extra_args="--watchdog-timeout 600 --api-key 'x y'"))
    assert cmd.argv[-4:] == ("--watchdog-timeout", "600", "--api-key", "x y")
