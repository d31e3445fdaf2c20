"""Helpers for the monitor tests: the simulated engine with the recorder flags, chats, and what its dumps say
when read by real torch (independently of m3ui's own reader)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np

from launch.command import RECORDER_DIR_ENV
from tests.sim_process import SimProcess, free_port, running_sim, sim_settings

PACED_FAST = {"M3UI_SIM_UNTHROTTLED": "0", "M3UI_SIM_DECODE_TPS": "3000", "M3UI_SIM_PREFILL_TPS": "50000"}
RECORDER_PATHS = ("/start_expert_distribution_record", "/stop_expert_distribution_record",
                  "/dump_expert_distribution_record")


@contextmanager
def sim_with(folder: Path | None = None, **changes: object) -> Iterator[SimProcess]:
    """A ready sim (seed single-GPU preset: uniform placement, 4 GPU experts per MoE layer) with `changes` to its
    settings, dumping into `folder`; paced (one forward pass per decoded token, as the real engine), but fast."""
    env = {**PACED_FAST, RECORDER_DIR_ENV: str(folder)} if folder is not None else PACED_FAST
    with running_sim(sim_settings(free_port(), **changes), env) as sim:
        yield sim


def recorder_on(buffer_size: int = -1, masks: bool = True) -> dict[str, object]:
    """Settings changes for the `stat` recorder; -1: an unbounded buffer (a dump holds exactly the passes
    since the last one)."""
    return {"expert_distribution_recorder_mode": "stat", "expert_distribution_recorder_buffer_size": buffer_size,
            "record_kt_gpu_expert_distribution": masks}


def chat(url: str, text: str = "write a poem about the sea", max_tokens: int = 24, api_key: str | None = None) -> None:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    body = {"model": "m", "messages": [{"role": "user", "content": text}], "max_tokens": max_tokens}
    response = httpx.post(f"{url}/v1/chat/completions", json=body, headers=headers, timeout=30, trust_env=False)
    response.raise_for_status()


@contextmanager
def chatting(url: str, max_tokens: int = 60, ready_timeout: float = 60) -> Iterator[None]:
    """Two users chatting with the engine at `url` for as long as the block runs, from when it answers /health
    (a fleet's router comes up after the app does). A chat that fails fails the block, after it."""
    deadline = time.monotonic() + ready_timeout
    while not _answers_health(url):
        assert time.monotonic() < deadline, f"{url} did not answer /health in {ready_timeout:.0f} s"
        time.sleep(0.2)
    stop = threading.Event()
    failures: list[BaseException] = []

    def keep_chatting(topic: str) -> None:
        try:
            while not stop.is_set():
                chat(url, topic, max_tokens=max_tokens)
        except Exception as exc:  # raised in the test's thread, after the block
            failures.append(exc)

    users = [threading.Thread(target=keep_chatting, args=(topic,), daemon=True)
             for topic in ("write a poem about the sea", "explain how tides work")]
    for user in users:
        user.start()
    try:
        yield
    finally:
        stop.set()
        for user in users:
            user.join(30)
    if failures:
        raise failures[0]


def _answers_health(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=2, trust_env=False).status_code == 200
    except httpx.HTTPError:
        return False


def alive(sim: SimProcess) -> bool:
    return sim.proc.poll() is None and httpx.get(f"{sim.url}/health", timeout=2, trust_env=False).status_code == 200


@dataclass(frozen=True)
class DumpTruth:
    """One dump as torch reads it: activations and GPU hits summed over its passes."""

    counts: np.ndarray  # int64 [layers, experts]
    gpu_activations: int
    total_activations: int
    residency: np.ndarray | None  # bool [layers, experts]: GPU-resident in any pass; None without a mask file
    passes: int


def dump_now(url: str, folder: Path, gpu_mask: np.ndarray | None = None) -> DumpTruth:
    """Ask the engine for a dump and read the files it wrote with torch.load, before the monitor reads
    (and deletes) them. `gpu_mask`: the placement to assume when the engine writes no masks."""
    import torch

    before = set(folder.glob("*.pt")) if folder.is_dir() else set()
    httpx.post(f"{url}/dump_expert_distribution_record", timeout=30, trust_env=False).raise_for_status()
    new = sorted(set(folder.glob("*.pt")) - before)
    stat = [p for p in new if p.name.startswith("expert_distribution_recorder_")]
    masks = [p for p in new if p.name.startswith("gpu_expert_distribution_")]
    assert len(stat) == 1 and len(masks) <= 1, new
    counts = torch.load(stat[0], weights_only=True, map_location="cpu")["logical_count"].numpy().astype(np.int64)
    if masks:
        per_pass = torch.load(masks[0], weights_only=True, map_location="cpu")["gpu_expert_masks"].numpy()
    else:
        per_pass = np.broadcast_to(gpu_mask, counts.shape) if gpu_mask is not None else None
    passes = int((counts.reshape(len(counts), -1).sum(axis=1) > 0).sum())
    gpu = int((counts * per_pass).sum()) if per_pass is not None else 0
    residency = per_pass.any(axis=0) if masks else None
    return DumpTruth(counts.sum(axis=0), gpu, int(counts.sum()), residency, passes)
