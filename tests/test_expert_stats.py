"""Expert statistics from recorder dumps: ring sums, GPU hit rates, rankings, the window and the heatmap."""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
from PIL import Image

from m3ui.experts.dump_reader import read_dump, reduce_dump
from m3ui.experts.heatmap import png_data_url, render_heatmap
from m3ui.experts.hit_rate import ExpertRank, HitRate, coldest_gpu_experts, hottest_cpu_experts
from m3ui.experts.recorder_files import DumpPair, list_dump_files, pair_dumps, parse_dump_name
from m3ui.experts.window import ExpertSlice, ExpertWindow
from torchzip.reader import TorchFileError, load_tensors
from torchzip.writer import save_tensors

ROWS, LAYERS, EXPERTS = 5, 3, 4  # layer 0 is dense: never routed, mask rows False


def _ring() -> tuple[np.ndarray, np.ndarray]:
    counts = np.zeros((ROWS, LAYERS, EXPERTS), dtype=np.int32)
    masks = np.zeros((ROWS, LAYERS, EXPERTS), dtype=bool)
    return counts, masks


GPU = np.array([[False] * 4, [True, True, False, False], [True, False, False, False]])  # per layer


def test_hit_rate_and_per_layer_figures_follow_from_known_counts_and_masks():
    counts, masks = _ring()
    counts[0, 1] = [3, 1, 4, 0]  # layer 1: GPU experts 0, 1 -> 4 of 8
    counts[0, 2] = [2, 0, 0, 6]  # layer 2: GPU expert 0 -> 2 of 8
    counts[1, 1] = [0, 0, 0, 2]  # layer 1: 0 of 2
    counts[1, 2] = [5, 1, 1, 1]  # layer 2: 5 of 8
    masks[0] = masks[1] = GPU
    dump = reduce_dump(counts, masks)
    assert dump.passes == 2 and dump.residency_recorded
    np.testing.assert_array_equal(dump.counts, counts.sum(axis=0))
    np.testing.assert_array_equal(dump.gpu_hits, [0, 4, 7])
    np.testing.assert_array_equal(dump.residency, GPU)
    window = ExpertWindow(600)
    window.add(ExpertSlice(0, 1, dump.counts, dump.gpu_hits, dump.passes), dump.residency)
    assert window.hit_rate() == HitRate(11, 26) and window.hit_rate().rate == pytest.approx(11 / 26)
    assert window.layer_hit_rates() == (None, pytest.approx(4 / 10), pytest.approx(7 / 16))


def test_a_ring_that_wrapped_its_write_index_sums_every_written_row_whatever_their_order():
    counts, masks = _ring()
    for row in (3, 4, 0):  # the write index went 3, 4, then wrapped to 0; rows 1 and 2 stayed zero
        counts[row, 1, row % EXPERTS] = 10 + row
        counts[row, 2, 0] = 1
        masks[row] = GPU
    dump = reduce_dump(counts, masks)
    assert dump.passes == 3 and dump.buffer_rows == ROWS
    assert dump.counts[1].tolist() == [10 + 14, 0, 0, 13]  # rows 0 and 4 hit expert 0, row 3 expert 3
    np.testing.assert_array_equal(dump.counts, counts.sum(axis=0, dtype=np.int64))
    assert dump.gpu_hits.tolist() == [0, 24, 3]


def test_experts_moved_during_a_dump_count_as_gpu_hits_only_in_the_passes_they_were_on_the_gpu():
    counts, masks = _ring()
    counts[0, 1, 2] = counts[1, 1, 2] = 5  # expert 2 of layer 1 routed in two passes
    masks[0] = GPU  # first pass: expert 2 on the CPU
    masks[1] = GPU | np.array([[False] * 4, [False, False, True, False], [False] * 4])  # then moved to the GPU
    dump = reduce_dump(counts, masks)
    np.testing.assert_array_equal(dump.gpu_hits, [0, 5, 0])
    assert dump.residency[1, 2]  # shown as resident: it was for part of the dump


def test_all_false_masks_mean_kt_reported_nothing_so_the_fallback_placement_is_used():
    counts, masks = _ring()
    counts[0, 1] = [1, 2, 3, 4]
    fallback = np.ones((LAYERS, EXPERTS), dtype=bool)  # plain sglang: every expert on the GPU
    assert reduce_dump(counts, masks).gpu_hits is None
    dump = reduce_dump(counts, masks, fallback)
    assert not dump.residency_recorded and dump.gpu_hits.tolist() == [0, 10, 0]


def test_an_idle_dump_has_no_activations_and_says_nothing_about_residency_even_with_a_fallback():
    counts, masks = _ring()
    dump = reduce_dump(counts, masks, np.ones((LAYERS, EXPERTS), dtype=bool))
    assert dump.passes == 0 and dump.counts.sum() == 0 and dump.gpu_hits.tolist() == [0, 0, 0]
    assert dump.residency is None and not dump.residency_recorded


def test_mismatched_ring_shapes_are_refused():
    counts, _ = _ring()
    with pytest.raises(ValueError, match="gpu_expert_masks"):
        reduce_dump(counts, np.zeros((ROWS, LAYERS, EXPERTS + 1), dtype=bool))


def test_rankings_name_the_hottest_cpu_experts_and_the_coldest_gpu_experts_in_routed_layers():
    counts = np.array([[0, 0, 0, 0], [9, 1, 7, 3], [8, 2, 0, 5]])
    hottest = hottest_cpu_experts(counts, GPU, n=3)
    assert hottest == (ExpertRank(1, 2, 7, 7 / 20), ExpertRank(2, 3, 5, 5 / 15), ExpertRank(1, 3, 3, 3 / 20))
    coldest = coldest_gpu_experts(counts, GPU, n=2)  # layer 0 (dense, all zero) is not "cold VRAM"
    assert [(r.layer, r.expert, r.activations) for r in coldest] == [(1, 1, 1), (2, 0, 8)]
    assert hottest_cpu_experts(np.zeros((LAYERS, EXPERTS), dtype=int), GPU) == ()


def test_ranking_ties_go_to_the_lower_layer_then_expert_and_short_lists_are_whole():
    counts = np.full((LAYERS, EXPERTS), 5)
    counts[0] = 0
    assert [(r.layer, r.expert) for r in hottest_cpu_experts(counts, GPU, n=3)] == [(1, 2), (1, 3), (2, 1)]
    assert [(r.layer, r.expert) for r in coldest_gpu_experts(counts, GPU, n=50)] == [(1, 0), (1, 1), (2, 0)]


def test_the_window_forgets_old_slices_and_answers_hit_rates_between_two_checkpoints():
    window = ExpertWindow(span_s=10)
    ones = np.ones((LAYERS, EXPERTS), dtype=np.int64)
    for end, gpu in ((1, 0), (2, 12), (3, 6)):
        window.add(ExpertSlice(end - 1, end, ones, np.array([0, gpu, 0]), passes=1), GPU)
    assert window.between(1, 3) == HitRate(18, 24)
    assert window.between(2, 3) == HitRate(6, 12)
    assert window.between(3, 9) is None
    window.add(ExpertSlice(3, 12.5, ones * 2, None, passes=2), None)  # residency unknown for this one
    assert [p.time for p in window.points()] == [3, 12.5]  # ends 1 and 2 fell out of the 10 s window
    assert window.activations == 12 + 24 and window.hit_rate() == HitRate(6, 12)
    np.testing.assert_array_equal(window.counts, ones * 3)
    np.testing.assert_array_equal(window.residency, GPU)  # the latest known residency survives


def test_a_slice_of_another_shape_starts_a_new_window():
    window = ExpertWindow(60)
    window.add(ExpertSlice(0, 1, np.ones((2, 2)), np.array([1, 1]), passes=1), None)
    window.add(ExpertSlice(1, 2, np.ones((3, 2)), np.array([0, 0, 0]), passes=1), None)
    assert window.activations == 6 and len(window.points()) == 1


def test_dump_files_are_recognised_by_name_and_a_mask_pairs_with_the_stat_file_before_it(tmp_path):
    names = ["expert_distribution_recorder_100.5.pt", "gpu_expert_distribution_100.6.pt",
             "expert_distribution_recorder_200.0.pt", "expert_distribution_recorder_150.0_0.pt",  # per_pass: not ours
             "gpu_expert_distribution_50.0.pt", "notes.txt"]
    for name in names:
        (tmp_path / name).write_bytes(b"")
    assert parse_dump_name(tmp_path / names[3]) is None
    pairs = pair_dumps(list_dump_files(tmp_path))
    assert [(p.stat.path.name, p.mask.path.name if p.mask else None) for p in pairs] == [
        ("expert_distribution_recorder_100.5.pt", "gpu_expert_distribution_100.6.pt"),
        ("expert_distribution_recorder_200.0.pt", None),
    ]
    assert list_dump_files(tmp_path / "missing") == ()


def _write_dump(folder, counts, masks, stamp="1712345678.5"):
    stat = folder / f"expert_distribution_recorder_{stamp}.pt"
    mask = folder / f"gpu_expert_distribution_{stamp}1.pt"
    save_tensors(stat, {"rank": 0, "logical_count": counts, "average_utilization_rate_over_window": None},
                 device="cuda:0")
    save_tensors(mask, {"gpu_expert_masks": masks})
    return DumpPair(parse_dump_name(stat), parse_dump_name(mask))


def test_a_full_size_dump_read_from_files_matches_the_arrays_it_was_written_from(tmp_path):
    rng = np.random.default_rng(1)
    counts = rng.integers(0, 50, (1000, 60, 128), dtype=np.int32)
    counts[:, :3] = 0
    counts[700:] = 0  # rows never written
    masks = np.zeros(counts.shape, dtype=bool)
    masks[:700, 3:, :20] = True
    dump = read_dump(_write_dump(tmp_path, counts, masks))
    assert dump.passes == 700
    np.testing.assert_array_equal(dump.counts, counts.sum(axis=0))
    assert int(dump.gpu_hits.sum()) == int(counts[:, :, :20].sum())


def test_a_dump_saved_by_real_torch_reads_the_same(tmp_path):
    torch = pytest.importorskip("torch")
    counts, masks = _ring()
    counts[2, 1] = [1, 2, 3, 4]
    masks[2] = GPU
    stat = tmp_path / "expert_distribution_recorder_10.0.pt"
    mask = tmp_path / "gpu_expert_distribution_10.1.pt"
    torch.save({"rank": 0, "logical_count": torch.from_numpy(counts), "average_utilization_rate_over_window": None},
               stat)
    torch.save({"gpu_expert_masks": torch.from_numpy(masks)}, mask)
    dump = read_dump(pair_dumps(list_dump_files(tmp_path))[0])
    assert dump.passes == 1 and dump.gpu_hits.tolist() == [0, 3, 0]


def test_a_file_without_counts_is_refused_with_its_name(tmp_path):
    path = tmp_path / "expert_distribution_recorder_1.0.pt"
    save_tensors(path, {"rank": 0})
    with pytest.raises(TorchFileError, match="logical_count"):
        read_dump(DumpPair(parse_dump_name(path), None))


def test_mapped_loading_gives_the_same_tensors_and_still_refuses_truncated_files(tmp_path):
    counts, masks = _ring()
    counts[1, 2] = [4, 3, 2, 1]
    pair = _write_dump(tmp_path, counts, masks)
    np.testing.assert_array_equal(load_tensors(pair.stat.path, mapped=True)["logical_count"], counts)
    data = pair.stat.path.read_bytes()
    for keep in (len(data) // 2, len(data) - 30):
        cut = tmp_path / f"cut{keep}.pt"
        cut.write_bytes(data[:keep])
        with pytest.raises(TorchFileError):
            load_tensors(cut, mapped=True)


def _decode(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


def test_the_heatmap_marks_gpu_experts_and_brightens_with_activations():
    counts = np.array([[0, 0, 0, 0], [1, 10, 100, 1000], [0, 0, 0, 5]])
    png = render_heatmap(counts, GPU, cell_px=4)
    pixels = _decode(png)
    assert pixels.shape == (LAYERS * 4, EXPERTS * 4, 3)
    gpu_edge, cpu_edge = pixels[4 + 3, 0], pixels[4 + 3, 2 * 4]  # bottom rows of layer 1's cells 0 and 2
    assert tuple(gpu_edge) != tuple(cpu_edge)
    brightness = [int(pixels[5, e * 4 + 1].sum()) for e in range(EXPERTS)]
    assert brightness == sorted(brightness) and brightness[0] < brightness[-1]
    url = png_data_url(png)
    assert url.startswith("data:image/png;base64,") and base64.b64decode(url.split(",", 1)[1]) == png


def test_an_m3_sized_heatmap_stays_under_25_kb_as_a_data_url():
    rng = np.random.default_rng(0)
    counts = rng.integers(0, 100_000, (60, 128))  # noise: the hardest case for PNG compression
    counts[:3] = 0
    residency = rng.random((60, 128)) < 0.3
    assert len(png_data_url(render_heatmap(counts, residency))) < 25_000
    assert len(render_heatmap(np.zeros((60, 128), dtype=int), None)) < 2_000


class _CountedSums(np.ndarray):
    """Counts how often anything sums a slice's whole array (the window's running totals sum rows, axis=1)."""

    whole_sums = 0

    def sum(self, *args, **kwargs):  # type: ignore[override]
        if not args and kwargs.get("axis") is None:
            type(self).whole_sums += 1
        return super().sum(*args, **kwargs)


def test_the_window_sums_each_slice_once_however_often_it_is_read():
    window = ExpertWindow(600.0)
    for i in range(50):
        counts = np.full((3, 8), i + 1, dtype=np.int64).view(_CountedSums)
        window.add(ExpertSlice(float(i), float(i + 1), counts, np.full(3, i + 1, dtype=np.int64), 1), None)
    _CountedSums.whole_sums = 0
    for _ in range(5):  # every dump publishes the points; every answer asks for its stretch
        points = window.points()
        rate = window.between(10.0, 20.0)
    assert _CountedSums.whole_sums <= 50  # once per slice, on first use
    assert [p.activations for p in points] == [24 * (i + 1) for i in range(50)]
    assert rate == HitRate(sum(3 * (i + 1) for i in range(10, 20)), sum(24 * (i + 1) for i in range(10, 20)))
