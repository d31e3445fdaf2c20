"""Sizing from the model's own config.json: the contract's figures for M3, and advice inside the reference
deployments' ranges, explained in the operator's terms."""

import json

import pytest

from launch.advice import SizingInputs, advise
from launch.model_config import ModelConfigError, load_model_shape, parse_model_config
from launch.sizing import (
    GB,
    band_for_tp,
    kv_bytes_per_token,
    max_gpu_experts,
    memory_plan,
    model_footprint,
)

M3 = load_model_shape(None)


def test_m3_shape_is_read_from_text_config():
    assert (M3.num_layers, M3.num_moe_layers, M3.first_moe_layer) == (60, 57, 3)
    assert (M3.num_routed_experts, M3.experts_per_token, M3.hidden_size, M3.moe_intermediate_size) == (
        128, 4, 6144, 3072)
    assert M3.quant_method == "mxfp8"


def test_contract_figures_for_m3():
    fp = model_footprint(M3)
    assert fp.params_per_expert == 56_623_104
    assert fp.bytes_per_expert / 1e6 == pytest.approx(58.4, abs=0.05)
    assert fp.gpu_expert_unit_bytes / GB == pytest.approx(3.33, abs=0.005)
    assert fp.cpu_expert_bytes / GB == pytest.approx(465, abs=1)
    assert fp.non_expert_params / 1e9 == pytest.approx(13, abs=0.5)
    assert fp.non_expert_bytes / GB == pytest.approx(16, abs=0.6)


@pytest.mark.parametrize("tp,kb", [(1, 137), (2, 76), (4, 45), (8, 45)])
def test_kv_cache_per_token_per_gpu_matches_the_contract(tp, kb):
    assert kv_bytes_per_token(M3, tp) / 1e3 == pytest.approx(kb, abs=1)


@pytest.mark.parametrize("tp,fraction", [(1, 0.85), (4, 0.6), (8, 0.55)])
def test_advice_for_seed_hardware_lands_in_the_seed_band_and_under_the_ceiling(tp, fraction):
    inputs = SizingInputs(tp=tp, gpu_bytes=96 * GB, mem_fraction=fraction, physical_cores=64, numa_nodes=2,
                          ram_bytes=1024 * GB)
    experts, cpuinfer, pools = advise(M3, inputs)
    lo, hi = band_for_tp(tp)
    ceiling = max_gpu_experts(M3, tp=tp, gpu_bytes=96 * GB, mem_fraction=fraction)
    assert lo <= experts.value <= hi and experts.value <= ceiling
    assert cpuinfer.field == "kt_cpuinfer" and cpuinfer.value == 64
    assert pools.field == "kt_threadpool_count" and pools.value == 2
    labels = {f.label for f in experts.breakdown}
    assert "largest --kt-num-gpu-experts that fits" in labels
    # In the operator's terms: no "seed", what the range is, and what the KV cache is for.
    assert f"keep {lo}-{hi} of each MoE layer's experts on the GPU" in experts.why and "seed" not in experts.why
    assert "KV cache (the GPU memory that holds the conversations)" in experts.why


def test_advice_never_exceeds_a_small_gpus_ceiling_and_says_why():
    inputs = SizingInputs(tp=1, gpu_bytes=30 * GB, mem_fraction=0.85, physical_cores=8, numa_nodes=1,
                          ram_bytes=None)
    (experts, *_rest) = advise(M3, inputs)
    ceiling = max_gpu_experts(M3, tp=1, gpu_bytes=30 * GB, mem_fraction=0.85)
    assert experts.value == ceiling < band_for_tp(1)[0]
    assert experts.why.startswith(f"Only {ceiling} experts per layer fit on the GPU")
    assert "reference deployments on one GPU keep 2-8" in experts.why and "seed" not in experts.why


def test_memory_plan_verdicts_follow_sglangs_arithmetic():
    def verdict(**kw):
        base = dict(tp=1, gpu_bytes=96 * GB, mem_fraction=0.85, gpu_experts=4, prefill_threshold_on=True)
        return memory_plan(M3, **{**base, **kw}).verdict

    assert verdict() == "ok"
    assert verdict(tp=8, mem_fraction=0.55, gpu_experts=40) == "ok"
    assert verdict(gpu_experts=40) == "oom_at_load"
    assert verdict(mem_fraction=0.3) == "kv_pool_too_small"
    assert verdict(mem_fraction=0.95) == "oom_outside_pool"
    assert verdict(mem_fraction=0.95, prefill_threshold_on=False) == "ok"


def test_more_gpu_experts_leave_fewer_kv_tokens():
    plans = [memory_plan(M3, tp=1, gpu_bytes=96 * GB, mem_fraction=0.85, gpu_experts=n, prefill_threshold_on=False)
             for n in (0, 4, 8)]
    assert plans[0].kv_tokens > plans[1].kv_tokens > plans[2].kv_tokens > 0


def test_config_without_text_config_and_other_spellings():
    shape = parse_model_config({"model_type": "deepseek_v3", "num_hidden_layers": 4, "hidden_size": 64,
                                "moe_intermediate_size": 32, "intermediate_size": 128, "n_routed_experts": 8,
                                "num_experts_per_tok": 2, "num_attention_heads": 4, "vocab_size": 100,
                                "first_k_dense_replace": 1})
    assert shape.moe_layer_ids == (1, 2, 3) and shape.num_routed_experts == 8
    assert shape.moe_intermediate_size == 32 and shape.head_dim == 16


def test_missing_dimensions_and_files_are_named(tmp_path):
    with pytest.raises(ModelConfigError, match="num_hidden_layers"):
        parse_model_config({"hidden_size": 8})
    with pytest.raises(ModelConfigError, match="no config.json"):
        load_model_shape(tmp_path)
    (tmp_path / "config.json").write_text("{oops")
    with pytest.raises(ModelConfigError, match="cannot read"):
        load_model_shape(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps([1]))
    with pytest.raises(ModelConfigError, match="not a JSON object"):
        load_model_shape(tmp_path)
