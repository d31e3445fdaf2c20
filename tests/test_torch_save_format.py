"""The torch.save format without torch: our reader on genuine torch.save files, our writer under genuine torch.load.

torch (CPU build) is a dev dependency and is imported only here, as the reference implementation.
"""

from __future__ import annotations

import collections
import io
import math
import os
import pickle
import struct
import time
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from torchzip.reader import TorchFileError, load_tensors
from torchzip.writer import RECORD_ALIGNMENT, STORAGE_TYPE_BY_DTYPE, save_tensors

# The real recorder's default ring buffer and a MiniMax-M3-like layer x expert grid.
BUFFER, LAYERS, EXPERTS = 1000, 60, 128
STAT_NAME = "expert_distribution_recorder_1712345678.123456.pt"
MASK_NAME = "gpu_expert_distribution_1712345678.123457.pt"
EXTRA_MEMORY_LIMIT = 200 << 20  # what reading one hostile file may cost
BOMB_BYTES = 320 << 20  # the deflate bombs' inflated size: past that limit, so a reader that inflates them fails


def _torch_value(value):
    return torch.tensor(value) if isinstance(value, np.ndarray) else value


@pytest.fixture(scope="module")
def full_size_dumps(tmp_path_factory) -> dict[str, tuple[Path, torch.Tensor]]:
    """Full-size dumps written by genuine torch.save, shaped as sglang-kt's recorder writes them."""
    folder = tmp_path_factory.mktemp("dumps")
    generator = torch.Generator().manual_seed(0)
    logical_count = torch.randint(0, 4096, (BUFFER, LAYERS, EXPERTS), dtype=torch.int32, generator=generator)
    masks = torch.rand((BUFFER, LAYERS, EXPERTS), generator=generator) < 0.3
    torch.save(
        {"rank": 0, "logical_count": logical_count, "average_utilization_rate_over_window": None},
        folder / STAT_NAME,
    )
    torch.save({"gpu_expert_masks": masks}, folder / MASK_NAME)
    return {"stat": (folder / STAT_NAME, logical_count), "mask": (folder / MASK_NAME, masks)}


def test_reader_reads_a_full_size_stat_dump_written_by_torch(full_size_dumps):
    path, logical_count = full_size_dumps["stat"]
    loaded = load_tensors(path)
    assert set(loaded) == {"rank", "logical_count", "average_utilization_rate_over_window"}
    assert loaded["rank"] == 0 and loaded["average_utilization_rate_over_window"] is None
    counts = loaded["logical_count"]
    assert counts.dtype == np.int32 and counts.shape == (BUFFER, LAYERS, EXPERTS)
    np.testing.assert_array_equal(counts, logical_count.numpy())
    assert not counts.flags.writeable


def test_reader_reads_a_full_size_gpu_mask_dump_written_by_torch(full_size_dumps):
    path, masks = full_size_dumps["mask"]
    loaded = load_tensors(path)
    assert list(loaded) == ["gpu_expert_masks"]
    assert loaded["gpu_expert_masks"].dtype == np.bool_
    np.testing.assert_array_equal(loaded["gpu_expert_masks"], masks.numpy())


def test_reading_a_full_size_stat_dump_is_cheap_enough_for_a_one_second_panel(full_size_dumps):
    path, _ = full_size_dumps["stat"]
    load_tensors(path)  # warm the page cache as a panel re-reading the newest dump would
    started = time.perf_counter()
    total = load_tensors(path)["logical_count"].sum(axis=0)
    elapsed = time.perf_counter() - started
    assert total.shape == (LAYERS, EXPERTS)
    assert elapsed < 0.5, f"reading and summing a {BUFFER}x{LAYERS}x{EXPERTS} dump took {elapsed:.3f}s"


def test_reader_reads_small_dumps_with_a_utilization_rate(tmp_path):
    counts = torch.arange(2 * 3 * 4, dtype=torch.int32).reshape(2, 3, 4)
    torch.save({"rank": 3, "logical_count": counts, "average_utilization_rate_over_window": 0.75}, tmp_path / "s.pt")
    loaded = load_tensors(tmp_path / "s.pt")
    assert loaded["rank"] == 3 and loaded["average_utilization_rate_over_window"] == 0.75
    np.testing.assert_array_equal(loaded["logical_count"], counts.numpy())


def test_reader_reads_a_mask_dump_that_is_a_prefix_of_a_larger_buffer(tmp_path):
    # With --expert-distribution-recorder-buffer-size -1 the recorder saves buffer[:size] of a grown buffer.
    grown = torch.zeros((128, 3, 8), dtype=torch.bool)
    grown[:5, 1, ::3] = True
    torch.save({"gpu_expert_masks": grown[:5]}, tmp_path / "m.pt")
    loaded = load_tensors(tmp_path / "m.pt")["gpu_expert_masks"]
    assert loaded.shape == (5, 3, 8)
    np.testing.assert_array_equal(loaded, grown[:5].numpy())


def test_reader_honours_storage_offsets_strides_and_shared_storages(tmp_path):
    base = torch.arange(60, dtype=torch.int64).reshape(3, 4, 5)
    views = {
        "whole": base,
        "transposed": base.transpose(0, 2),
        "offset": base[1:],
        "stepped": base[:, ::2, 1:],
        "column": base[2, :, 3],
        "scalar": torch.tensor(7),
        "empty": torch.zeros(0, 3),
    }
    torch.save(views, tmp_path / "views.pt")
    loaded = load_tensors(tmp_path / "views.pt")
    for name, view in views.items():
        assert loaded[name].shape == tuple(view.shape), name
        np.testing.assert_array_equal(loaded[name], view.numpy(), err_msg=name)


@pytest.mark.parametrize("dtype", sorted(STORAGE_TYPE_BY_DTYPE, key=str))
def test_reader_reads_every_storage_type_torch_writes(tmp_path, dtype):
    values = (np.arange(12) % 5 - 2).astype(dtype).reshape(3, 4)
    torch.save({"x": torch.from_numpy(values.copy())}, tmp_path / "d.pt")
    loaded = load_tensors(tmp_path / "d.pt")["x"]
    assert loaded.dtype == dtype
    np.testing.assert_array_equal(loaded, values)


def test_reader_refuses_a_dtype_numpy_cannot_hold_with_a_clear_error(tmp_path):
    torch.save({"x": torch.zeros(2, dtype=torch.bfloat16)}, tmp_path / "bf16.pt")
    with pytest.raises(TorchFileError, match="BFloat16Storage"):
        load_tensors(tmp_path / "bf16.pt")


def _stat_dump(counts: np.ndarray, rate: float | None = None) -> dict:
    return {"rank": 0, "logical_count": counts, "average_utilization_rate_over_window": rate}


def _records(path: Path) -> list[tuple[str, int, int, int]]:
    """(name without folder, data offset, crc, size) per record, serialization_id (random) left out."""
    with zipfile.ZipFile(path) as archive, open(path, "rb") as raw:
        records = []
        for info in archive.infolist():
            raw.seek(info.header_offset + 26)
            name_length, extra_length = struct.unpack("<HH", raw.read(4))
            data_offset = info.header_offset + 30 + name_length + extra_length
            records.append((info.filename, data_offset, info.CRC, info.file_size))
    return [record for record in records if not record[0].endswith("serialization_id")]


@pytest.mark.parametrize(
    ("name", "obj"),
    [
        (STAT_NAME, _stat_dump(np.arange(2 * 3 * 4, dtype=np.int32).reshape(2, 3, 4))),
        (MASK_NAME, {"gpu_expert_masks": np.arange(5 * 3 * 7).reshape(5, 3, 7) % 3 == 0}),
        ("mixed.pt", {"f": np.ones((2, 2), np.float32), "i": np.arange(300, dtype=np.int64), "s": "hi", "b": True}),
    ],
)
def test_writer_output_matches_torch_save_record_for_record(tmp_path, name, obj):
    (tmp_path / "torch").mkdir()
    (tmp_path / "ours").mkdir()
    torch.save({key: _torch_value(value) for key, value in obj.items()}, tmp_path / "torch" / name)
    save_tensors(tmp_path / "ours" / name, obj)
    ours = _records(tmp_path / "ours" / name)
    assert ours == _records(tmp_path / "torch" / name)
    assert all(offset % RECORD_ALIGNMENT == 0 for _, offset, _, _ in ours)
    assert os.path.getsize(tmp_path / "ours" / name) == os.path.getsize(tmp_path / "torch" / name)


@pytest.mark.parametrize(
    "obj",
    [
        _stat_dump(np.random.default_rng(0).integers(0, 9, (BUFFER, LAYERS, EXPERTS), dtype=np.int32), 0.5),
        {"gpu_expert_masks": np.random.default_rng(1).random((BUFFER, LAYERS, EXPERTS)) < 0.2},
        {"scalar": np.array(2.5, np.float32), "empty": np.zeros((0, 4), np.int64), "big": 2**40, "neg": -(2**33)},
        {f"k{i}": i for i in range(1500)},  # more than one pickle SETITEMS batch
    ],
)
def test_writer_output_loads_in_real_torch_with_equal_values(tmp_path, obj):
    save_tensors(tmp_path / "w.pt", obj)
    loaded = torch.load(tmp_path / "w.pt", weights_only=True)
    assert list(loaded) == list(obj)
    for key, value in obj.items():
        if isinstance(value, np.ndarray):
            assert loaded[key].numpy().dtype == value.dtype and tuple(loaded[key].shape) == value.shape
            np.testing.assert_array_equal(loaded[key].numpy(), value)
        else:
            assert loaded[key] == value and type(loaded[key]) is type(value)


def test_writer_records_the_device_tag_the_real_stat_recorder_saves_from(tmp_path):
    counts = np.arange(6, dtype=np.int32).reshape(1, 2, 3)
    save_tensors(tmp_path / "cuda.pt", _stat_dump(counts), device="cuda:0")
    with zipfile.ZipFile(tmp_path / "cuda.pt") as archive:
        assert b"cuda:0" in archive.read("cuda/data.pkl")
    from_torch = torch.load(tmp_path / "cuda.pt", weights_only=True, map_location="cpu")
    np.testing.assert_array_equal(from_torch["logical_count"].numpy(), counts)
    np.testing.assert_array_equal(load_tensors(tmp_path / "cuda.pt")["logical_count"], counts)


def test_writer_leaves_no_partial_file_behind(tmp_path):
    save_tensors(tmp_path / STAT_NAME, _stat_dump(np.zeros((1, 1, 1), np.int32)))
    assert [path.name for path in tmp_path.iterdir()] == [STAT_NAME]


def test_writer_refuses_values_torch_load_would_not_accept(tmp_path):
    with pytest.raises(TypeError, match="'bad'"):
        save_tensors(tmp_path / "x.pt", {"bad": [1, 2]})
    with pytest.raises(TypeError, match="dtype"):
        save_tensors(tmp_path / "x.pt", {"bad": np.array(["text"])})


_DTYPES = st.sampled_from([np.int32, np.int64, np.bool_, np.float32, np.float64, np.uint8, np.float16])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    arrays=st.lists(
        _DTYPES.flatmap(lambda dtype: hnp.arrays(dtype, hnp.array_shapes(min_dims=0, max_dims=4, min_side=0))),
        max_size=4,
    ),
    scalars=st.lists(st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(), st.text())),
)
def test_writer_then_reader_round_trips_arrays_and_scalars(tmp_path, arrays, scalars):
    obj = {f"a{i}": array for i, array in enumerate(arrays)} | {f"s{i}": value for i, value in enumerate(scalars)}
    save_tensors(tmp_path / "r.pt", obj)
    loaded = load_tensors(tmp_path / "r.pt")
    assert list(loaded) == list(obj)
    for key, value in obj.items():
        if isinstance(value, np.ndarray):
            assert loaded[key].dtype == value.dtype and loaded[key].shape == value.shape
            np.testing.assert_array_equal(loaded[key], value)
        else:
            assert loaded[key] == value or (value != value and loaded[key] != loaded[key])  # NaN stays NaN
            assert type(loaded[key]) is type(value)


class _StorageRef:
    def __init__(self, numel: int) -> None:
        self.numel = numel


class _CraftingPickler(pickle.Pickler):
    """Pickles _StorageRef as torch does storages, so tests can build hostile but well-formed files."""

    def persistent_id(self, obj):
        if isinstance(obj, _StorageRef):
            return ("storage", torch.IntStorage, "0", "cpu", obj.numel)
        return None


class _Reduced:
    def __init__(self, function, *args) -> None:
        self.reduction = (function, args)

    def __reduce__(self):
        return self.reduction


def _crafted_file(path: Path, obj: object, storage: bytes = b"", bomb: str | None = None) -> Path:
    """`obj` pickled as torch does, with one storage record; the record named `bomb`, if any, is replaced by a
    deflate bomb (~0.3 MB in the file, BOMB_BYTES of zeros once inflated)."""
    pickled = io.BytesIO()
    _CraftingPickler(pickled, protocol=2).dump(obj)
    with zipfile.ZipFile(path, "w") as archive:
        for name, content in (("crafted/data.pkl", pickled.getvalue()), ("crafted/data/0", storage)):
            if name != bomb:
                archive.writestr(name, content)
                continue
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            with archive.open(info, "w", force_zip64=True) as member:
                for _ in range(BOMB_BYTES >> 20):
                    member.write(bytes(1 << 20))
    return path


def _tensor(storage: int | _Reduced, size: tuple[int, ...], stride: tuple[int, ...], offset: int = 0) -> _Reduced:
    """A tensor over the file's storage of `storage` int32 elements (or over anything else the test passes)."""
    storage = _StorageRef(storage) if isinstance(storage, int) else storage
    return _Reduced(torch._utils._rebuild_tensor_v2, storage, offset, size, stride, False, collections.OrderedDict())


def test_reader_reads_a_hand_crafted_file_like_torch_does(tmp_path):
    path = _crafted_file(tmp_path / "ok.pt", {"x": _tensor(4, (2, 2), (2, 1))}, np.arange(4, dtype="<i4").tobytes())
    np.testing.assert_array_equal(load_tensors(path)["x"], [[0, 1], [2, 3]])


def test_reader_refuses_a_pickle_that_calls_a_disallowed_global(tmp_path):
    target = tmp_path / "created_by_the_pickle"
    path = _crafted_file(tmp_path / "evil.pt", {"x": _Reduced(os.mkdir, str(target))})
    with pytest.raises(TorchFileError, match=r"refusing to load global \w+\.mkdir"):
        load_tensors(path)
    assert not target.exists()


@pytest.mark.parametrize(
    ("obj", "storage", "message"),
    [
        ({"x": _tensor(4, (3, 2), (2, 1))}, bytes(16), "reaches element 5 of a storage of 4"),
        ({"x": _tensor(4, (4,), (1,), offset=1)}, bytes(16), "reaches element 4"),
        ({"x": _tensor(4, (2, 2), (2, 1))}, bytes(12), "holds 12 bytes, expected 4"),
        ({"x": _tensor(4, (2, 2), (2,))}, bytes(16), "differ in length"),
        ({"x": _tensor(4, (-1,), (1,))}, bytes(16), "bad tensor layout"),
        ({"x": _tensor(_tensor(4, (4,), (1,)), (4,), (1,))}, bytes(16), "not a persistent storage record"),
        ([1, 2], b"", "holds a list, expected a dict"),
    ],
    ids=[
        "past-the-end",
        "offset-past-the-end",
        "short-storage",
        "stride-rank",
        "negative-size",
        "tensor-as-storage",
        "not-a-dict",
    ],
)
def test_reader_refuses_inconsistent_tensors_with_a_clear_error(tmp_path, obj, storage, message):
    with pytest.raises(TorchFileError, match=message):
        load_tensors(_crafted_file(tmp_path / "bad.pt", obj, storage))


@pytest.fixture(scope="module")
def small_dump_bytes(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("small") / STAT_NAME
    counts = torch.arange(2 * 3 * 4, dtype=torch.int32).reshape(2, 3, 4)
    torch.save({"rank": 0, "logical_count": counts, "average_utilization_rate_over_window": None}, path)
    return path.read_bytes()


@pytest.mark.parametrize("keep", [0, 1, 22, 300, 700, -200, -22, -1])
def test_truncated_dump_raises_torch_file_error(tmp_path, small_dump_bytes, keep):
    path = tmp_path / "cut.pt"
    path.write_bytes(small_dump_bytes[:keep])
    with pytest.raises(TorchFileError, match="cut.pt"):
        load_tensors(path)


def test_dump_with_damaged_tensor_data_fails_its_checksum(tmp_path, small_dump_bytes):
    path = tmp_path / "damaged.pt"
    path.write_bytes(small_dump_bytes)
    data_offset = next(offset for name, offset, _, _ in _records(path) if name.endswith("/data/0"))
    damaged = bytearray(small_dump_bytes)
    damaged[data_offset] ^= 0xFF
    path.write_bytes(damaged)
    with pytest.raises(TorchFileError, match="CRC"):
        load_tensors(path)


def test_a_file_that_is_not_a_zip_raises_torch_file_error(tmp_path):
    (tmp_path / "text.pt").write_text("not a torch file")
    with pytest.raises(TorchFileError, match="not a readable torch.save file"):
        load_tensors(tmp_path / "text.pt")


def test_a_missing_dump_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_tensors(tmp_path / "absent.pt")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_truncation_or_byte_damage_either_loads_or_raises_torch_file_error(tmp_path, small_dump_bytes, data):
    damaged = bytearray(small_dump_bytes[: data.draw(st.integers(0, len(small_dump_bytes)))])
    for position in data.draw(st.lists(st.integers(0, max(len(damaged) - 1, 0)), max_size=4)) if damaged else []:
        damaged[position] = data.draw(st.integers(0, 255))
    (tmp_path / "fuzz.pt").write_bytes(damaged)
    try:
        loaded = load_tensors(tmp_path / "fuzz.pt")
    except TorchFileError:
        return
    assert isinstance(loaded, dict)


# Hostile archives: each must end in one clear TorchFileError line, within a bounded amount of memory.


@pytest.fixture(scope="module")
def hostile_archives(tmp_path_factory, small_dump_bytes) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("hostile")
    storage = np.arange(4, dtype="<i4").tobytes()
    return {
        "pickle-bomb": _crafted_file(folder / "pickle.pt", {}, bomb="crafted/data.pkl").read_bytes(),
        "storage-bomb": _crafted_file(
            folder / "storage.pt", {"x": _tensor(BOMB_BYTES // 4, (4,), (1,))}, bomb="crafted/data/0"
        ).read_bytes(),
        "zero-stride": _crafted_file(folder / "zero.pt", {"x": _tensor(1, (1 << 28, 2), (0, 0))}, storage[:4])
        .read_bytes(),
        "valid": small_dump_bytes,
    }


def _hostile_case(data: st.DataObject, archives: dict[str, bytes], tmp_path: Path) -> Path:
    kind = data.draw(st.sampled_from(["truncated", "zero-stride", "huge-shape", "pickle-bomb", "storage-bomb"]))
    path = tmp_path / f"{kind}.pt"
    if kind == "truncated":
        valid = archives["valid"]
        path.write_bytes(valid[: data.draw(st.integers(0, len(valid) - 1))])
    elif kind == "huge-shape":
        dims = data.draw(st.lists(st.integers(1, 1 << 62), min_size=1, max_size=4))
        strides = data.draw(st.lists(st.integers(0, 1 << 20), min_size=len(dims), max_size=len(dims)))
        extent = data.draw(st.integers(1, 64))
        if math.prod(dims) <= extent:
            dims[0] = extent + 1
        _crafted_file(path, {"x": _tensor(extent, tuple(dims), tuple(strides))}, bytes(4 * extent))
    elif kind == "zero-stride" and data.draw(st.booleans()):
        rows = data.draw(st.integers(2, 1 << 40))
        _crafted_file(path, {"x": _tensor(1, (rows,), (0,))}, bytes(4))
    else:
        path.write_bytes(archives[kind])
    return path


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_hostile_archives_end_in_one_clear_error_within_bounded_memory(tmp_path, hostile_archives, data):
    path = _hostile_case(data, hostile_archives, tmp_path)
    for mapped in (False, True):
        tracemalloc.start()
        try:
            with pytest.raises(TorchFileError) as raised:
                load_tensors(path, mapped=mapped)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        message = str(raised.value)
        assert message.startswith(str(path)) and "\n" not in message
        assert peak < EXTRA_MEMORY_LIMIT, f"{path.name} (mapped={mapped}) took {peak >> 20} MB"


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("zero-stride", "shows more elements than its storage of 1 holds"),
        ("pickle-bomb", "data.pkl holds 335544320 bytes, more than the 1048576 allowed"),
        ("storage-bomb", "would inflate past 67108864 bytes"),
    ],
)
def test_each_hostile_archive_is_named_for_what_it_is(tmp_path, hostile_archives, kind, message):
    path = tmp_path / "hostile.pt"
    path.write_bytes(hostile_archives[kind])
    with pytest.raises(TorchFileError, match=message):
        load_tensors(path)
