"""The recorded profile saved for the engine: the file `--init-expert-location` reads with frequency placement.

sglang-kt 0.7.2 reads it only when the path ends in `.pt`, takes `logical_count` [rows, layers, experts] and
sums its rows (`launch/placement.py`). The recording's rows are summed here into one row, which gives the
engine the very same totals in a 30 kB file instead of every forward pass. The file is written whole under
a temporary name and renamed, so an engine never reads half of it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from torchzip.writer import save_tensors

PROFILE_PREFIX = "expert_profile_"


def default_profile_path(folder: Path) -> Path:
    return folder / f"{PROFILE_PREFIX}{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}.pt"


def save_profile(path: Path, counts: np.ndarray) -> Path:
    """Write `counts` int [layers, experts] as `{"logical_count": [1, layers, experts]}`; returns the absolute path."""
    if path.suffix != ".pt":
        raise ValueError(f"{path}: the engine reads counts only from a .pt file")
    if path.is_dir():
        raise ValueError(f"{path} is a folder")
    path = path.expanduser().resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    # int32 as the recorder writes it, unless a long recording outgrows it (torch sums either in int64)
    dtype = np.int32 if counts.max(initial=0) < np.iinfo(np.int32).max else np.int64
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    save_tensors(partial, {"logical_count": counts.astype(dtype)[None]})
    os.replace(partial, path)
    return path
