"""Write `torch.save` files without torch, for the simulated engine's expert recorder dumps.

The output mirrors what torch 2.13's `torch.save` writes, byte for byte apart from the random
`.data/serialization_id`: a stored (uncompressed) zip whose records all sit under one folder named after
the file (its base name without the last extension), each record's data aligned to 64 bytes by an `FB`
padding extra field, with data descriptors and a zip64 end record as torch's bundled miniz writes them.
Records, in order: `data.pkl` (pickle protocol 2 of the object, tensors as
`torch._utils._rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict())` with storages as
persistent ids `("storage", torch.<Type>Storage, key, device, numel)`), `.format_version`,
`.storage_alignment`, `byteorder`, `data/<key>` (raw little-endian storage bytes), `version`,
`.data/serialization_id`.
"""

from __future__ import annotations

import os
import pickle
import secrets
import struct
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import BinaryIO

import numpy as np

# torch's pickled storage type per element type; torch.load and our reader both rely on these names.
STORAGE_TYPE_BY_DTYPE: Mapping[np.dtype, str] = {
    np.dtype(np.bool_): "BoolStorage",
    np.dtype(np.uint8): "ByteStorage",
    np.dtype(np.int8): "CharStorage",
    np.dtype(np.int16): "ShortStorage",
    np.dtype(np.int32): "IntStorage",
    np.dtype(np.int64): "LongStorage",
    np.dtype(np.float16): "HalfStorage",
    np.dtype(np.float32): "FloatStorage",
    np.dtype(np.float64): "DoubleStorage",
    np.dtype(np.complex64): "ComplexFloatStorage",
    np.dtype(np.complex128): "ComplexDoubleStorage",
}
RECORD_ALIGNMENT = 64
PICKLE_PROTOCOL = 2

TorchSaveValue = int | float | bool | str | None | np.ndarray

_PICKLE_BATCH = 1000  # pickle writes dict items in SETITEMS batches of this size
_U32_MAX = 0xFFFFFFFF


class _PickleWriter:
    """Emits the protocol-2 opcodes CPython's pickler produces for a torch.save'd dict of scalars and tensors.

    Hand-written because the stock pickler refuses to name `torch._utils._rebuild_tensor_v2` without
    importing torch. Repeated strings and globals become BINGETs as in torch's output (CPython memoizes
    by identity, we by value: the same bytes for the recorder's dicts).
    """

    def __init__(self, device: str) -> None:
        self._out = bytearray(b"\x80" + bytes([PICKLE_PROTOCOL]))
        self._memo: dict[tuple[str, str], int] = {}
        self._memo_size = 0  # every BINPUT takes the next index, memoized by name or not
        self._device = device
        self.storages: list[memoryview] = []  # raw little-endian bytes of each tensor, in key order

    def dump_dict(self, obj: Mapping[str, TorchSaveValue]) -> bytes:
        self._out += b"}"
        self._put()
        items = list(obj.items())
        for start in range(0, len(items), _PICKLE_BATCH):
            batch = items[start : start + _PICKLE_BATCH]
            if len(batch) > 1:
                self._out += b"("
            for key, value in batch:
                if not isinstance(key, str):
                    raise TypeError(f"dict keys must be str, got {type(key).__name__}")
                self._str(key)
                self._value(key, value)
            self._out += b"u" if len(batch) > 1 else b"s"
        self._out += b"."
        return bytes(self._out)

    def _value(self, key: str, value: TorchSaveValue) -> None:
        if value is None:
            self._out += b"N"
        elif isinstance(value, bool):
            self._out += b"\x88" if value else b"\x89"
        elif isinstance(value, int):
            self._int(int(value))
        elif isinstance(value, float):
            self._out += b"G" + struct.pack(">d", float(value))
        elif isinstance(value, str):
            self._str(value)
        elif isinstance(value, np.ndarray):
            self._tensor(value)
        else:
            raise TypeError(f"{key!r}: cannot save a {type(value).__name__} (int, float, bool, str, None, ndarray)")

    def _put(self) -> int:
        index = self._memo_size
        self._memo_size += 1
        self._out += b"q" + bytes([index]) if index < 256 else b"r" + struct.pack("<I", index)
        return index

    def _memoized(self, kind: str, text: str) -> bool:
        """Writes a BINGET and returns True when `text` was pickled before."""
        index = self._memo.get((kind, text))
        if index is None:
            return False
        self._out += b"h" + bytes([index]) if index < 256 else b"j" + struct.pack("<I", index)
        return True

    def _remember(self, kind: str, text: str) -> None:
        self._memo[(kind, text)] = self._put()

    def _str(self, text: str) -> None:
        if self._memoized("str", text):
            return
        data = text.encode("utf-8", "surrogatepass")
        self._out += b"X" + struct.pack("<I", len(data)) + data
        self._remember("str", text)

    def _global(self, module: str, name: str) -> None:
        qualified = f"{module}\n{name}\n"
        if self._memoized("global", qualified):
            return
        self._out += b"c" + qualified.encode("ascii")
        self._remember("global", qualified)

    def _int(self, value: int) -> None:
        if 0 <= value <= 0xFF:
            self._out += b"K" + bytes([value])
        elif 0 <= value <= 0xFFFF:
            self._out += b"M" + struct.pack("<H", value)
        elif -(2**31) <= value < 2**31:
            self._out += b"J" + struct.pack("<i", value)
        else:
            encoded = pickle.encode_long(value)
            if len(encoded) > 0xFF:
                raise ValueError(f"integer too large to save: {value}")
            self._out += b"\x8a" + bytes([len(encoded)]) + encoded

    def _int_tuple(self, values: tuple[int, ...]) -> None:
        if not values:
            self._out += b")"  # the empty tuple is never memoized
            return
        short_tuple_opcode = {1: b"\x85", 2: b"\x86", 3: b"\x87"}.get(len(values))  # TUPLE1..TUPLE3
        if short_tuple_opcode is None:
            self._out += b"("
        for value in values:
            self._int(value)
        self._out += short_tuple_opcode or b"t"
        self._put()

    def _tensor(self, array: np.ndarray) -> None:
        storage_type = STORAGE_TYPE_BY_DTYPE.get(array.dtype.newbyteorder("="))
        if storage_type is None:
            raise TypeError(f"cannot save arrays of dtype {array.dtype}")
        key = str(len(self.storages))
        little_endian = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
        self.storages.append(little_endian.reshape(-1).view(np.uint8).data)  # no copy of a contiguous array
        self._global("torch._utils", "_rebuild_tensor_v2")
        self._out += b"(("  # the rebuild arguments, then the persistent id tuple
        self._str("storage")
        self._global("torch", storage_type)
        self._str(key)
        self._str(self._device)
        self._int(array.size)
        self._out += b"t"
        self._put()
        self._out += b"Q"  # BINPERSID: torch.load swaps the tuple for the storage
        self._int(0)  # storage offset
        self._int_tuple(array.shape)
        self._int_tuple(_contiguous_strides(array.shape))
        self._out += b"\x89"  # requires_grad=False
        self._global("collections", "OrderedDict")
        self._out += b")R"  # OrderedDict(): no backward hooks
        self._put()
        self._out += b"t"
        self._put()
        self._out += b"R"
        self._put()


def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major strides in elements, as torch computes them (a zero-length dim counts as 1)."""
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def _padding_extra(offset: int, name_length: int) -> bytes:
    """The `FB` extra field that moves a record's data to the next RECORD_ALIGNMENT boundary."""
    data_start = offset + 30 + name_length + 4  # local header, name, FB field header
    padding = -data_start % RECORD_ALIGNMENT
    return b"FB" + struct.pack("<H", padding) + b"Z" * padding


def _write_zip_stored(file: BinaryIO, records: list[tuple[str, bytes | memoryview]]) -> None:
    """Writes a stored zip laid out as torch's miniz writer lays it out (flags 0x0808: data descriptor, UTF-8)."""
    offset = 0
    central = bytearray()
    for name, data in records:
        encoded_name = name.encode("utf-8")
        size = len(data)
        if offset + size + 4096 > _U32_MAX:
            raise ValueError("torch.save files over 4 GiB need zip64 records, which this writer does not write")
        crc = zlib.crc32(data)
        extra = _padding_extra(offset, len(encoded_name))
        file.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 0, 0x0808, 0, 0, 0, 0, 0, 0, len(encoded_name), len(extra)))
        file.write(encoded_name + extra)
        file.write(data)
        file.write(struct.pack("<IIII", 0x08074B50, crc, size, size))
        central += struct.pack(
            "<IHHHHHHIIIHHHHHII", 0x02014B50, 0, 0, 0x0808, 0, 0, 0, crc, size, size,
            len(encoded_name), 0, 0, 0, 0, 0, offset,
        )  # fmt: skip
        central += encoded_name
        offset += 30 + len(encoded_name) + len(extra) + size + 16
    count = len(records)
    zip64_end_offset = offset + len(central)
    file.write(central)
    file.write(struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 0x031E, 0x002D, 0, 0, count, count, len(central), offset))
    file.write(struct.pack("<IIQI", 0x07064B50, 0, zip64_end_offset, 1))
    file.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, count, count, len(central), offset, 0))


def save_tensors(path: str | os.PathLike[str], obj: Mapping[str, TorchSaveValue], *, device: str = "cpu") -> None:
    """Writes `obj` as `torch.save(obj, path)` would, with ndarrays saved as tensors.

    `device` is the location tag stored with every tensor: the real stat recorder saves `logical_count`
    straight from the GPU, so its files say "cuda:0" (torch.load then needs map_location on a CPU host).
    The file appears atomically (written beside it, then renamed), so a reader never sees half of it.
    """
    path = Path(path)
    pickler = _PickleWriter(device)
    data_pkl = pickler.dump_dict(obj)
    archive = path.name.rsplit(".", 1)[0]  # torch names the folder after the file, less its extension
    records: list[tuple[str, bytes | memoryview]] = [
        ("data.pkl", data_pkl),
        (".format_version", b"1"),
        (".storage_alignment", str(RECORD_ALIGNMENT).encode()),
        ("byteorder", b"little"),
        *((f"data/{key}", storage) for key, storage in enumerate(pickler.storages)),
        ("version", b"3\n"),
        (".data/serialization_id", f"{secrets.randbits(64):020d}{secrets.randbits(64):020d}".encode()),
    ]
    partial = path.with_name(path.name + ".partial")
    with open(partial, "wb") as file:
        _write_zip_stored(file, [(f"{archive}/{name}", data) for name, data in records])
    os.replace(partial, path)
