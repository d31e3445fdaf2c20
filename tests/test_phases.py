"""The start-up phase parser on sglang-kt 0.7.2's exact log lines (ENGINE_CONTRACT.md §2)."""

import pytest

from launch.phases import Phase, PhaseTracker, clean_line, parse_line, strip_prefix

# One start-up as sglang-kt prints it (TP1), messages copied from the wheel's format strings.
STARTUP = [
    "[2026-11-29 19:07:13 TP0] Init torch distributed begin.",
    "[2026-11-29 19:07:14 TP0] Init torch distributed ends. elapsed=1.02 s, mem usage=0.31 GB",
    "[2026-11-29 19:07:14 TP0] Load weight begin. avail mem=93.12 GB",
    "[NativeMoEWrapper Layer 3] load_experts: 812.3ms, prepare_tensors: 1.2ms, build_ptrs: 0.1ms, "
    "create_moe: 3.0ms, cpp_load_weights: 900.1ms, cleanup: 2.0ms, total: 1718.7ms",
    "Loading safetensors checkpoint shards:  45% Completed | 9/20 [00:12<00:15,  1.23s/it]",
    "[2026-11-29 19:17:13 TP0] Load weight end. elapsed=600.12 s, type=MiniMaxM3ForCausalLM, "
    "dtype=torch.bfloat16, avail mem=61.20 GB, mem usage=31.92 GB.",
    "[2026-11-29 19:17:14 TP0] KV Cache is allocated. #tokens: 181340, K size: 12.21 GB, V size: 12.21 GB",
    "[2026-11-29 19:17:14 TP0] Memory pool end. avail mem=11.30 GB",
    "[2026-11-29 19:17:14 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=11.20 GB",
    "[2026-11-29 19:17:17 TP0] Capture cuda graph end. Time elapsed: 2.51 s. mem usage=0.35 GB. avail mem=10.85 GB.",
    "[2026-11-29 19:17:18 TP0] max_total_num_tokens=181340, chunked_prefill_size=4096, max_prefill_tokens=16384, "
    "max_running_requests=48, context_len=1048576, available_gpu_mem=10.85 GB",
    # uvicorn's lines in sglang's format (utils/common.py set_uvicorn_logging_configs)
    "[2026-11-29 19:17:19] INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)",
    "[2026-11-29 19:17:25] The server is fired up and ready to roll!",
]


@pytest.mark.parametrize(("line", "phase"), [
    (STARTUP[0], Phase.STARTING),
    (STARTUP[2], Phase.LOADING_WEIGHTS),
    (STARTUP[3], Phase.LOADING_WEIGHTS),
    (STARTUP[4], Phase.LOADING_WEIGHTS),
    (STARTUP[5], Phase.KV_CACHE),
    (STARTUP[6], Phase.KV_CACHE),
    (STARTUP[8], Phase.CUDA_GRAPHS),
    (STARTUP[9], Phase.CUDA_GRAPHS),
    (STARTUP[10], Phase.WARMUP),
    (STARTUP[11], Phase.WARMUP),
    (STARTUP[12], Phase.READY),
])
def test_each_contract_line_announces_its_phase(line, phase):
    event = parse_line(line)
    assert event is not None and event.phase is phase


def test_other_lines_announce_nothing():
    assert parse_line("[2026-11-29 19:20:01 TP0] Decode batch, #running-req: 1, #token: 512, token usage: 0.00, "
                      "cuda graph: True, gen throughput (token/s): 21.3, #queue-req: 0") is None
    assert parse_line("") is None


def test_details_carry_the_numbers_from_the_line():
    assert "93.12 GB" in parse_line(STARTUP[2]).detail
    assert "181,340 tokens" in parse_line(STARTUP[6]).detail
    assert parse_line(STARTUP[3]).kt_layer == 3
    assert parse_line(STARTUP[4]).fraction == pytest.approx(9 / 20)


def test_prefix_is_stripped_with_or_without_rank():
    assert strip_prefix("[2026-11-29 19:07:13 TP0] Load weight begin.") == "Load weight begin."
    assert strip_prefix("[2026-11-29 19:07:13] The server is fired up") == "The server is fired up"


def test_tqdm_carriage_return_updates_read_as_the_last_one():
    line = ("\rCapturing batches (bs=1 avail_mem=11.10 GB):   0%|          | 0/2 [00:00<?, ?it/s]"
            "\rCapturing batches (bs=2 avail_mem=10.90 GB):  50%|#####     | 1/2 [00:02<00:02,  2.10s/it]\n")
    assert clean_line(line).startswith("Capturing batches (bs=2")
    event = parse_line(line)
    assert event.phase is Phase.CUDA_GRAPHS and event.fraction == pytest.approx(0.5)


def test_tracker_walks_through_every_phase_in_order_to_full_progress():
    tracker = PhaseTracker(moe_layers=57)
    seen = []
    progress = []
    for line in STARTUP:
        tracker.feed(line)
        if not seen or seen[-1] is not tracker.phase:
            seen.append(tracker.phase)
        progress.append(tracker.progress)
    assert seen == list(Phase)
    assert progress == sorted(progress)
    assert progress[-1] == 1.0


def test_kt_layer_lines_give_progress_as_layers_seen_over_moe_layers():
    tracker = PhaseTracker(moe_layers=4)
    tracker.feed(STARTUP[2])
    for layer in (3, 4, 4, 5):  # with TP > 1 every rank prints the same layer: count distinct ones
        tracker.feed(f"[NativeMoEWrapper Layer {layer}] load_experts: 1.0ms, total: 2.0ms")
    assert tracker.phase_fraction == pytest.approx(3 / 4)
    assert "3/4 MoE layers" in tracker.detail
    # shard bars no longer move the bar once KT's finer count is known
    tracker.feed(STARTUP[4])
    assert tracker.phase_fraction == pytest.approx(3 / 4)


def test_without_the_moe_layer_count_shard_bars_give_the_progress():
    tracker = PhaseTracker()
    tracker.feed(STARTUP[2])
    tracker.feed(STARTUP[3])
    tracker.feed(STARTUP[4])
    assert tracker.phase_fraction == pytest.approx(9 / 20)


def test_a_late_line_from_a_slower_rank_does_not_rewind_the_phase():
    tracker = PhaseTracker()
    tracker.feed(STARTUP[8])
    tracker.feed("[2026-11-29 19:17:13 TP7] Load weight end. elapsed=600.1 s, type=X, dtype=bf16, "
                 "avail mem=61.2 GB, mem usage=31.9 GB.")
    assert tracker.phase is Phase.CUDA_GRAPHS
