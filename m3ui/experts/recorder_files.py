"""The expert recorder's dump files in its folder: which are there, and which belong to one dump.

sglang-kt 0.7.2 (`sglang/srt/eplb/expert_distribution.py`) writes, per `/dump_expert_distribution_record`
in mode `stat`, `expert_distribution_recorder_{time.time()}.pt` and then, with
`--record-kt-gpu-expert-distribution`, `gpu_expert_distribution_{time.time()}.pt`, both from rank 0, both
before the HTTP reply. The per_pass/per_token modes write `expert_distribution_recorder_{time}_{rank}.pt`
(lists of per-pass records, not counts); the name patterns below leave those alone.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

DumpKind = Literal["stat", "mask"]

_PATTERNS: dict[DumpKind, re.Pattern[str]] = {
    "stat": re.compile(r"expert_distribution_recorder_(\d+(?:\.\d+)?(?:e[+-]?\d+)?)\.pt"),
    "mask": re.compile(r"gpu_expert_distribution_(\d+(?:\.\d+)?(?:e[+-]?\d+)?)\.pt"),
}


@dataclass(frozen=True)
class DumpFile:
    path: Path
    kind: DumpKind
    time: float  # the engine's time.time() when it wrote the file (from the name)


@dataclass(frozen=True)
class DumpPair:
    """The files one dump wrote: the counts, and the GPU masks when the engine records them."""

    stat: DumpFile
    mask: DumpFile | None


def parse_dump_name(path: Path) -> DumpFile | None:
    """The dump file `path` names, or None for any other file."""
    for kind, pattern in _PATTERNS.items():
        match = pattern.fullmatch(path.name)
        if match:
            return DumpFile(path, kind, float(match.group(1)))
    return None


def list_dump_files(folder: Path) -> tuple[DumpFile, ...]:
    """The stat and mask dumps in `folder`, oldest first; empty when the folder cannot be listed."""
    try:
        with os.scandir(folder) as entries:
            names = [entry.name for entry in entries if entry.is_file()]
    except OSError:
        return ()
    found = (parse_dump_name(folder / name) for name in names)
    return tuple(sorted((f for f in found if f is not None), key=lambda f: (f.time, f.kind)))


def pair_dumps(files: tuple[DumpFile, ...]) -> tuple[DumpPair, ...]:
    """Group time-ordered files into dumps: a mask belongs to the stat file written just before it.

    A mask with no stat file before it (its stat file was consumed earlier, or another client's dump is
    half written) is left out.
    """
    pairs: list[DumpPair] = []
    for file in files:
        if file.kind == "stat":
            pairs.append(DumpPair(file, None))
        elif pairs and pairs[-1].mask is None:
            pairs[-1] = DumpPair(pairs[-1].stat, file)
    return tuple(pairs)
