"""GPU expert placement follows sglang-kt 0.7.2's rules for every strategy, mask for mask.

The expected masks are written out by hand from the rules, or computed with real torch exactly as
`kt_ep_wrapper.py` / `kt_kernel/experts_base.py` compute them (torch is a dev dependency, the reference).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from launch.model_config import load_model_shape, parse_model_config
from launch.placement import PlacementError, gpu_expert_mask, kt_active, total_gpu_experts
from launch.settings import LaunchSettings
from launch.torch_compat import torch_randperm, torch_topk_indices

M3 = load_model_shape(None)  # 60 layers: 3 dense then 57 MoE, 128 experts
KT = LaunchSettings(kt_weight_path="/weights/kt")


def small_shape(num_layers: int = 6, dense: int = 2, experts: int = 8):
    return parse_model_config({
        "num_hidden_layers": num_layers, "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 32,
        "num_local_experts": experts, "num_experts_per_tok": 2, "vocab_size": 100,
        "moe_layer_freq": [0] * dense + [1] * (num_layers - dense),
    })  # fmt: skip


def per_layer_ids(mask: np.ndarray, layer: int) -> list[int]:
    return np.flatnonzero(mask[layer]).tolist()


def real_mask_from_selection(shape, selected_flat: np.ndarray) -> np.ndarray:
    mask = np.zeros((shape.num_layers, shape.num_routed_experts), dtype=bool)
    mask.ravel()[selected_flat] = True
    mask[: shape.first_moe_layer] = True
    return mask


def test_kt_without_a_gpu_expert_amount_is_inactive_and_keeps_every_expert_on_gpu():
    assert not kt_active(KT)
    assert not kt_active(LaunchSettings(kt_num_gpu_experts=8))  # no weight path
    assert total_gpu_experts(M3, KT) is None
    assert gpu_expert_mask(M3, KT).all()


def test_uniform_count_puts_ids_zero_to_k_minus_one_on_every_moe_layer():
    mask = gpu_expert_mask(M3, KT.replace(kt_num_gpu_experts=10))
    assert total_gpu_experts(M3, KT.replace(kt_num_gpu_experts=10)) == 570
    assert mask[:3].all()  # dense layers never reach the KT wrapper
    for layer in M3.moe_layer_ids:
        assert per_layer_ids(mask, layer) == list(range(10))


def test_uniform_ratio_overrides_count_and_gives_the_remainder_to_the_first_moe_layers():
    settings = KT.replace(kt_num_gpu_experts=100, kt_gpu_experts_ratio=0.1)
    total = total_gpu_experts(M3, settings)
    assert total == int(57 * 128 * 0.1) == 729  # 729 = 12 * 57 + 45
    per_layer = gpu_expert_mask(M3, settings)[list(M3.moe_layer_ids)].sum(axis=1)
    assert per_layer.tolist() == [13] * 45 + [12] * 12


def test_uniform_caps_a_layer_at_its_expert_count():
    shape = small_shape()
    mask = gpu_expert_mask(shape, KT.replace(kt_num_gpu_experts=20))
    assert mask.all()


def test_front_loading_fills_whole_layers_from_the_first_moe_layer():
    mask = gpu_expert_mask(M3, KT.replace(kt_num_gpu_experts=10, kt_expert_placement_strategy="front-loading"))
    per_layer = mask.sum(axis=1).tolist()
    assert per_layer[:7] == [128] * 7  # 3 dense + 4 full MoE layers = 512 experts
    assert per_layer_ids(mask, 7) == list(range(570 - 512))
    assert per_layer[8:] == [0] * 52


def test_random_matches_torch_randperm_seeded_42_over_moe_positions():
    shape = M3
    mask = gpu_expert_mask(shape, KT.replace(kt_num_gpu_experts=10, kt_expert_placement_strategy="random"))
    positions = [(layer, expert) for layer in shape.moe_layer_ids for expert in range(shape.num_routed_experts)]
    generator = torch.Generator(device="cpu")
    generator.manual_seed(42)
    expected = np.zeros_like(mask)
    for index in torch.randperm(len(positions), generator=generator, device="cpu")[:570].tolist():
        expected[positions[index]] = True
    expected[:3] = True
    assert np.array_equal(mask, expected)
    assert mask[3:].sum() == 570
    assert len(set(mask[3:].sum(axis=1).tolist())) > 1  # not uniform: the draw spreads unevenly


def test_random_placement_is_the_same_every_start():
    settings = KT.replace(kt_gpu_experts_ratio=0.3, kt_expert_placement_strategy="random")
    assert np.array_equal(gpu_expert_mask(M3, settings), gpu_expert_mask(M3, settings))


def test_frequency_takes_the_global_top_of_a_torch_saved_logical_count(tmp_path):
    generator = torch.Generator().manual_seed(7)
    # Small counts give many ties at the cut, where only an exact port of torch.topk agrees.
    logical_count = torch.randint(0, 4, (5, 60, 128), generator=generator, dtype=torch.int32)
    logical_count[:, :3] = 0  # the recorder never counts dense layers
    path = tmp_path / "expert_distribution_recorder_1.pt"
    torch.save({"rank": 0, "logical_count": logical_count, "average_utilization_rate_over_window": None}, path)
    settings = KT.replace(
        kt_num_gpu_experts=24, kt_expert_placement_strategy="frequency", init_expert_location=str(path)
    )

    mask = gpu_expert_mask(M3, settings)

    freq = torch.load(path, weights_only=True)["logical_count"].sum(dim=0).float()
    _, top = torch.topk(freq.view(-1), k=24 * 57, largest=True, sorted=False)
    assert np.array_equal(mask, real_mask_from_selection(M3, top.numpy()))
    hot = freq.numpy()[3:][mask[3:]]
    cold = freq.numpy()[3:][~mask[3:]]
    assert hot.min() >= cold.max()


def test_frequency_without_a_pt_file_matches_torch_topk_over_all_ties():
    settings = KT.replace(kt_num_gpu_experts=10, kt_expert_placement_strategy="frequency")
    mask = gpu_expert_mask(M3, settings)
    freq = torch.zeros(60, 128)
    freq[3:] = 1.0
    _, top = torch.topk(freq.view(-1), k=570, largest=True, sorted=False)
    assert np.array_equal(mask, real_mask_from_selection(M3, top.numpy()))


def test_frequency_rejects_a_logical_count_of_another_model(tmp_path):
    path = tmp_path / "other.pt"
    torch.save({"logical_count": torch.zeros(2, 48, 128, dtype=torch.int32)}, path)
    settings = KT.replace(
        kt_num_gpu_experts=4, kt_expert_placement_strategy="frequency", init_expert_location=str(path)
    )
    with pytest.raises(PlacementError, match=r"num_layers \(48\) doesn't match model num_layers \(60\)"):
        gpu_expert_mask(M3, settings)


def test_frequency_rejects_a_file_without_logical_count(tmp_path):
    path = tmp_path / "mapping.pt"
    torch.save({"physical_to_logical_map": torch.zeros(60, 128, dtype=torch.int64)}, path)
    settings = KT.replace(
        kt_num_gpu_experts=4, kt_expert_placement_strategy="frequency", init_expert_location=str(path)
    )
    with pytest.raises(PlacementError, match="does not contain 'logical_count'"):
        gpu_expert_mask(M3, settings)


def test_unknown_strategy_stops_the_start():
    with pytest.raises(PlacementError, match="Unknown kt_expert_placement_strategy"):
        gpu_expert_mask(M3, KT.replace(kt_num_gpu_experts=4, kt_expert_placement_strategy="greedy"))


@pytest.mark.parametrize("n", [0, 1, 2, 128, 7296, 70_000])
def test_randperm_port_equals_torch_randperm(n):
    generator = torch.Generator().manual_seed(42)
    assert np.array_equal(torch_randperm(n, 42), torch.randperm(n, generator=generator).numpy())


def test_topk_port_selects_the_same_set_as_torch_topk_on_tied_values():
    rng = np.random.default_rng(3)
    for trial in range(400):
        n = int(rng.choice([5, 60, 640, 7680]))
        values = rng.integers(0, 1 + trial % 5, n).astype(np.float32)  # trial % 5 == 0: all equal
        # Both libstdc++ paths torch picks between: partial_sort (k * 64 <= n) and nth_element.
        k = int(rng.integers(0, n // 64 + 1)) if trial % 2 else int(rng.integers(0, n + 1))
        _, expected = torch.topk(torch.from_numpy(values), k, largest=True, sorted=False)
        assert set(torch_topk_indices(values, k).tolist()) == set(expected.tolist()), (n, k)
