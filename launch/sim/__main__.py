"""`python -m launch.sim <sglang-kt flags>`: m3ui's simulated MiniMax-M3 engine, a real HTTP server.

It takes sglang-kt's command line, reads the model's config.json (--model-path, else the M3-shaped one
bundled under assets/), sizes the deployment on simulated hardware (M3UI_SIM_* variables, see config.py),
logs the real engine's startup lines or dies with its real error, then serves the OpenAI API.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from launch.model_config import BUNDLED_M3_CONFIG, ModelConfigError, ModelShape, load_model_shape
from launch.placement import PlacementError, gpu_expert_mask
from launch.sim.app import create_app
from launch.sim.args import parse_sim_args
from launch.sim.config import SimConfigError, load_sim_config
from launch.sim.dynamic_update import dynamic_update_refusal
from launch.sim.engine import build_engine
from launch.sim.logs import EngineLog, configure_engine_logging
from launch.sim.plan import build_plan
from launch.sim.recorder import RecorderModeUnsupported
from launch.sim.server import serve
from launch.sim.startup import WARMUP_SHARE, run_startup


def _model_shape(model_path: str | None, log: EngineLog) -> tuple[ModelShape, Path]:
    """The model's shape and the folder it came from; a path without config.json falls back to the bundled one."""
    if model_path is not None and (Path(model_path) / "config.json").is_file():
        return load_model_shape(model_path), Path(model_path)
    if model_path is not None:
        log.warning(f"[m3ui sim] no config.json in {model_path}; using the bundled MiniMax-M3-shaped "
                    f"{BUNDLED_M3_CONFIG}")
    return load_model_shape(None), BUNDLED_M3_CONFIG.parent


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_sim_args(sys.argv[1:] if argv is None else argv)
    settings = args.settings
    configure_engine_logging()
    log = EngineLog(settings.tp_size)
    try:
        shape, config_dir = _model_shape(settings.model_path, log)
        hardware = load_sim_config(settings.tp_size, settings=settings, shape=shape)
    except (SimConfigError, ModelConfigError) as exc:
        log.error(f"[m3ui sim] {exc}")
        return 1
    refusal = dynamic_update_refusal(settings)
    if refusal is not None:
        log.error(refusal)
        return 1
    log.info(f"[m3ui sim] m3ui's simulated engine, not sglang-kt: {hardware.gpu_count} simulated "
             f"{hardware.gpu_mem_gb:g} GB GPU(s), {hardware.ram_gb:g} GB RAM, model shape from {config_dir}")
    plan = build_plan(args, shape, hardware, config_dir)
    try:
        mask, placement_error = gpu_expert_mask(shape, settings), None
    except PlacementError as exc:
        mask, placement_error = None, str(exc)
    run_startup(plan, log, placement_error)
    assert mask is not None  # a placement error ended the process in run_startup
    try:
        engine = build_engine(plan, log, mask)
    except (RecorderModeUnsupported, ValueError) as exc:
        log.error(f"[m3ui sim] cannot simulate this recorder setting: {exc}")
        return 1
    serve(engine, create_app(engine, args), hardware.startup_seconds * WARMUP_SHARE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
