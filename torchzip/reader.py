"""Read `torch.save` files without torch: the expert recorder dumps, as numpy arrays.

A dump is untrusted input (any process can drop a file in the recorder folder), so `data.pkl` is read with
an unpickler that resolves only `torch._utils._rebuild_tensor_v2`, torch's typed storage classes and
`collections.OrderedDict`; any other global is refused before it is imported. Tensors come back as
read-only numpy views of the storage bytes (no copy), whatever device tag the file records (the real stat
recorder saves from "cuda:0").

Reading is bounded, whatever the file claims: a tensor may show no more elements than its storage holds (a
zero-stride layout of a 4-byte storage could otherwise pose as gigabytes for the first caller that sums it),
`data.pkl` may hold at most MAX_PICKLE_BYTES, and compressed records (torch.save writes none) may inflate to
at most MAX_INFLATED_BYTES in all, so a deflate bomb ends in an error, not in the memory it asks for.
"""

from __future__ import annotations

import collections
import io
import math
import mmap
import os
import pickle
import struct
import zipfile
import zlib
from dataclasses import dataclass

import numpy as np

from torchzip.writer import STORAGE_TYPE_BY_DTYPE

MAX_PICKLE_BYTES = 1 << 20  # a recorder dump's data.pkl is a few hundred bytes
MAX_INFLATED_BYTES = 64 << 20  # compressed records, all of one file together (a real M3 dump is ~40 MB)


class TorchFileError(ValueError):
    """The file is not a torch.save file this reader accepts (corrupt, truncated or unsafe)."""


@dataclass(frozen=True)
class _StorageType:
    """Stands in for a `torch.<Type>Storage` class inside the pickle."""

    name: str
    dtype: np.dtype


_STORAGE_TYPES = {name: _StorageType(name, dtype) for dtype, name in STORAGE_TYPE_BY_DTYPE.items()}


@dataclass(frozen=True)
class _Storage:
    """A storage record's elements. Only persistent_load makes these, so a pickle cannot pass a strided
    tensor off as a storage and steer the view below past the end of the real bytes."""

    elements: np.ndarray


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata=None):
    """The numpy view `torch._utils._rebuild_tensor_v2` would build, after checking it stays inside the storage."""
    if not isinstance(storage, _Storage):
        raise TorchFileError("a tensor's storage is not a persistent storage record")
    elements = storage.elements
    if backward_hooks or metadata:
        raise TorchFileError("tensors with backward hooks or extra metadata are not supported")
    if not (_is_index(storage_offset) and _is_index_tuple(size) and _is_index_tuple(stride)):
        raise TorchFileError(f"bad tensor layout: offset={storage_offset!r} size={size!r} stride={stride!r}")
    if len(size) != len(stride):
        raise TorchFileError(f"tensor size {size} and stride {stride} differ in length")
    if 0 in size:
        return elements[:0].reshape(size)
    last = storage_offset + sum((extent - 1) * step for extent, step in zip(size, stride, strict=True))
    if last >= elements.size:
        raise TorchFileError(f"tensor reaches element {last} of a storage of {elements.size}")
    if math.prod(size) > elements.size:
        raise TorchFileError(f"a tensor of shape {size} shows more elements than its storage of {elements.size} "
                             "holds (an overlapping or zero-stride layout)")
    itemsize = elements.dtype.itemsize
    return np.lib.stride_tricks.as_strided(
        elements[storage_offset:], shape=size, strides=[step * itemsize for step in stride], writeable=False
    )


def _is_index(value: object) -> bool:
    return type(value) is int and value >= 0


def _is_index_tuple(value: object) -> bool:
    return isinstance(value, tuple) and all(_is_index(item) for item in value)


class _Records:
    """The archive's records, each read at most once into memory and never past its bound: stored records are
    bounded by the file itself, compressed ones share one inflation budget."""

    def __init__(self, archive: zipfile.ZipFile) -> None:
        self._archive = archive
        self._inflation_left = MAX_INFLATED_BYTES

    def read(self, name: str, limit: int) -> bytes | memoryview:
        """The record's bytes; TorchFileError if it holds (or claims to hold) more than `limit`."""
        info = self._archive.getinfo(name)
        if info.file_size > limit:
            raise TorchFileError(f"record {name} holds {info.file_size} bytes, more than the {limit} allowed")
        if info.compress_type == zipfile.ZIP_STORED:
            return self._stored(info)
        if info.file_size > self._inflation_left:
            raise TorchFileError(f"record {name} would inflate past {MAX_INFLATED_BYTES} bytes of compressed records")
        with self._archive.open(info) as record:
            data = record.read(info.file_size + 1)
        if len(data) > info.file_size:  # zipfile stops at the declared size; this only guards that promise
            raise TorchFileError(f"record {name} inflates past its declared {info.file_size} bytes")
        self._inflation_left -= len(data)
        return data

    def size(self, name: str) -> int:
        return self._archive.getinfo(name).file_size

    def _stored(self, info: zipfile.ZipInfo) -> bytes | memoryview:
        return self._archive.read(info)


class _MappedRecords(_Records):
    """Stored records as views of a memory map of the file: no copy and no CRC pass (~17 ms for a 30 MB stat
    dump, against ~2 ms to sum it)."""

    def __init__(self, archive: zipfile.ZipFile, mapped: mmap.mmap) -> None:
        super().__init__(archive)
        self._mapped = mapped

    def _stored(self, info: zipfile.ZipInfo) -> bytes | memoryview:
        header = self._mapped[info.header_offset : info.header_offset + 30]
        if len(header) < 30 or header[:4] != b"PK\x03\x04":
            raise TorchFileError(f"record {info.filename} has no local header")
        name_length, extra_length = struct.unpack("<HH", header[26:30])
        start = info.header_offset + 30 + name_length + extra_length
        if start + info.file_size > len(self._mapped):
            raise TorchFileError(f"record {info.filename} runs past the end of the file")
        return memoryview(self._mapped)[start : start + info.file_size]


class _RestrictedUnpickler(pickle.Unpickler):
    def __init__(self, data: bytes | memoryview, records: _Records, prefix: str, byteorder: str) -> None:
        super().__init__(io.BytesIO(data))
        self._records = records
        self._prefix = prefix
        self._byteorder = byteorder
        self._storages: dict[str, _Storage] = {}

    def find_class(self, module: str, name: str) -> object:
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return _rebuild_tensor_v2
        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        if module == "torch" and name in _STORAGE_TYPES:
            return _STORAGE_TYPES[name]
        raise TorchFileError(f"refusing to load global {module}.{name}: only plain tensors are allowed")

    def persistent_load(self, pid: object) -> _Storage:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise TorchFileError(f"unexpected persistent id {pid!r:.200}")
        _, storage_type, key, _location, numel = pid
        if not (isinstance(storage_type, _StorageType) and isinstance(key, str) and _is_index(numel)):
            raise TorchFileError(f"malformed storage reference {pid!r:.200}")
        if key not in self._storages:
            name = f"{self._prefix}data/{key}"
            dtype = storage_type.dtype.newbyteorder("<" if self._byteorder == "little" else ">")
            size = self._records.size(name)
            if size != numel * dtype.itemsize:
                raise TorchFileError(f"storage {key} holds {size} bytes, expected {numel} x {dtype}")
            data = self._records.read(name, size)
            array = np.frombuffer(data, dtype=dtype)
            self._storages[key] = _Storage(array if dtype.isnative else array.astype(dtype.newbyteorder("=")))
        storage = self._storages[key]
        if storage.elements.dtype != storage_type.dtype:
            raise TorchFileError(f"storage {key} is used with two element types")
        return storage


def _archive_prefix(archive: zipfile.ZipFile) -> str:
    """The one top-level folder torch.save puts every record in, with its trailing slash."""
    pickles = [name for name in archive.namelist() if name.endswith("/data.pkl") and name.count("/") == 1]
    if len(pickles) != 1:
        raise TorchFileError(f"expected one <folder>/data.pkl record, found {len(pickles)}")
    return pickles[0].removesuffix("data.pkl")


def _read_byteorder(records: _Records, prefix: str) -> str:
    try:
        byteorder = bytes(records.read(f"{prefix}byteorder", 16)).decode("ascii")
    except KeyError:
        return "little"  # files from before torch recorded it were little-endian in practice
    if byteorder not in ("little", "big"):
        raise TorchFileError(f"unknown byteorder {byteorder!r}")
    return byteorder


# What a damaged file can make zipfile (OSError: a seek to a bogus offset), the unpickler or numpy raise;
# all mean "not a usable dump". The file is opened before parsing, so a missing file is not among them.
_PARSE_ERRORS = (
    zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, OSError, pickle.UnpicklingError, EOFError,
    KeyError, IndexError, TypeError, ValueError, AttributeError, struct.error, zlib.error, OverflowError,
)  # fmt: skip


def load_tensors(path: str | os.PathLike[str], *, mapped: bool = False) -> dict[str, object]:
    """The dict a torch.save file holds, tensors as read-only numpy arrays.

    Raises TorchFileError for anything that is not a well-formed torch.save of a dict of plain tensors
    and Python values; FileNotFoundError/PermissionError pass through unchanged. `mapped=True` makes the
    tensors views of a memory map of the file instead of checked copies: no copy and no CRC check, for
    the monitor's frequent reads of large dumps (damaged tensor bytes then go unnoticed; the structure
    is checked all the same).
    """
    with open(path, "rb") as file:
        return _load_open_file(file, os.fspath(path), mapped)


def _load_open_file(file: io.BufferedReader, path: str, mapped: bool = False) -> dict[str, object]:
    try:
        with zipfile.ZipFile(file) as archive:
            prefix = _archive_prefix(archive)
            records = (
                _MappedRecords(archive, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ))
                if mapped
                else _Records(archive)
            )
            unpickler = _RestrictedUnpickler(
                records.read(f"{prefix}data.pkl", MAX_PICKLE_BYTES), records, prefix, _read_byteorder(records, prefix)
            )
            obj = unpickler.load()
    except TorchFileError as error:
        raise TorchFileError(f"{path}: {error}") from None
    except _PARSE_ERRORS as error:
        raise TorchFileError(f"{path}: not a readable torch.save file ({error!r:.300})") from error
    if not isinstance(obj, dict):
        raise TorchFileError(f"{path}: holds a {type(obj).__name__}, expected a dict")
    return dict(obj)
