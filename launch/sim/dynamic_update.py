"""`--kt-enable-dynamic-expert-update`: refused by the simulated engine, with the reason.

What sglang-kt 0.7.2 does (`sglang/srt/layers/moe/kt_ep_wrapper.py`): the update runs only inside the layerwise
full-GPU prefill, i.e. for a prefill batch of at least `--kt-gpu-prefill-token-threshold` tokens; there, after
the layer ran on all its experts, `select_top_experts_from_batch` takes that batch's top
`--kt-num-gpu-experts` experts of the layer (`torch.topk` of the batch's counts) and `_update_gpu_experts_from_batch`
copies them into the layer's GPU slots and rewrites its masks. The copy picks its weight layout from the
context's quantization flags: fp8 block, fp8 per-channel, bf16, and otherwise INT4 Marlin
(`copy_experts_weights_int4`, which reads `w13_weight_packed`). M3's MXFP8 checkpoint sets `_is_mxfp8_quant`,
none of the first three, so the update would take the INT4 path and fail on weights the layer does not have
(MXFP4 is skipped explicitly; MXFP8 is not). Read, not run: no GPU here. Simulating a speed-up that the real
engine cannot deliver for M3 would mislead, so the simulated engine refuses the flag at start.
"""

from __future__ import annotations

from launch.placement import kt_active
from launch.settings import LaunchSettings

REFUSAL = (
    "[m3ui sim] --kt-enable-dynamic-expert-update is not simulated: sglang-kt 0.7.2 updates GPU experts only "
    "during the layerwise GPU prefill (--kt-gpu-prefill-token-threshold), and for an MXFP8 checkpoint such as "
    "MiniMax-M3 its expert copy takes the INT4 path (copy_experts_weights_int4), which needs weights the layer "
    "does not have; use --kt-expert-placement-strategy frequency with --init-expert-location instead "
    "(`python -m launch placement plan`)"
)


def dynamic_update_refusal(settings: LaunchSettings) -> str | None:
    """The reason the simulated engine will not start with these settings, or None."""
    return REFUSAL if settings.kt_enable_dynamic_expert_update and kt_active(settings) else None
