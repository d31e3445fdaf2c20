"""A rolling window of recorder dumps ("slices"): activation counts and GPU hits over the last minutes.

Each slice covers the time between two dumps. Sums over the window are kept as running totals, so adding
a slice costs one [layers, experts] addition, whatever the window's length.
"""

from __future__ import annotations

import functools
import operator
from collections import deque
from dataclasses import dataclass

import numpy as np

from m3ui.experts.hit_rate import HitRate, layer_hit_rates


@dataclass(frozen=True, eq=False)
class ExpertSlice:
    start: float  # time of the dump before (or of the start of recording)
    end: float  # time of this dump
    counts: np.ndarray  # int [layers, experts]: activations in (start, end]
    gpu_hits: np.ndarray | None  # int64 [layers]: those served by GPU-resident experts; None: unknown
    passes: int

    # Both are read for every slice of the window at every dump and per-answer lookup: summed once, on first use.
    @functools.cached_property
    def activations(self) -> int:
        return int(self.counts.sum())

    @functools.cached_property
    def hit_rate(self) -> HitRate | None:
        return None if self.gpu_hits is None else HitRate(int(self.gpu_hits.sum()), self.activations)


@dataclass(frozen=True)
class HitRatePoint:
    time: float  # the slice's end
    hit_rate: float | None  # None: nothing routed, or residency unknown
    activations: int
    passes: int


class ExpertWindow:
    """Slices whose end lies within `span_s` of the newest one. Not thread-safe: its owner locks."""

    def __init__(self, span_s: float) -> None:
        self._span_s = span_s
        self.clear()

    def clear(self) -> None:
        self._slices: deque[ExpertSlice] = deque()
        self._counts: np.ndarray | None = None  # int64 [layers, experts], all slices
        self._hits: np.ndarray | None = None  # int64 [layers], slices with known hits
        self._known_totals: np.ndarray | None = None  # int64 [layers], the same slices' activations
        self.residency: np.ndarray | None = None  # bool [layers, experts], the latest known

    def add(self, piece: ExpertSlice, residency: np.ndarray | None) -> None:
        """Append a slice; a slice of another shape (the engine changed model) starts a new window."""
        if self._counts is not None and self._counts.shape != piece.counts.shape:
            self.clear()
        if self._counts is None:
            layers = piece.counts.shape[0]
            self._counts = np.zeros(piece.counts.shape, dtype=np.int64)
            self._hits, self._known_totals = np.zeros(layers, dtype=np.int64), np.zeros(layers, dtype=np.int64)
        stored = ExpertSlice(piece.start, piece.end, piece.counts.astype(np.int32), piece.gpu_hits, piece.passes)
        self._slices.append(stored)
        self._apply(stored, +1)
        if residency is not None:
            self.residency = residency
        while self._slices and self._slices[0].end < piece.end - self._span_s:
            self._apply(self._slices.popleft(), -1)

    def _apply(self, piece: ExpertSlice, sign: int) -> None:
        assert self._counts is not None and self._hits is not None and self._known_totals is not None
        self._counts += sign * piece.counts
        if piece.gpu_hits is not None:
            self._hits += sign * piece.gpu_hits
            self._known_totals += sign * piece.counts.sum(axis=1)

    @property
    def counts(self) -> np.ndarray | None:
        """int64 [layers, experts]: activations over the window (a copy)."""
        return None if self._counts is None else self._counts.copy()

    @property
    def activations(self) -> int:
        return 0 if self._counts is None else int(self._counts.sum())

    def hit_rate(self) -> HitRate | None:
        """Over the slices whose residency is known; None when they routed nothing (or there are none)."""
        if self._hits is None or self._known_totals is None or not self._known_totals.any():
            return None
        return HitRate(int(self._hits.sum()), int(self._known_totals.sum()))

    def layer_hit_rates(self) -> tuple[float | None, ...]:
        if self._hits is None or self._known_totals is None:
            return ()
        return layer_hit_rates(self._hits, self._known_totals)

    def between(self, t0: float, t1: float) -> HitRate | None:
        """Over the slices that ended in (t0, t1] with known residency; None when there is none.

        Exact when a dump was taken at t0 and at t1 (see ExpertSource.checkpoint); it covers every request
        the engine served meanwhile, not one conversation only.
        """
        rates = [rate for s in self._slices if t0 < s.end <= t1 and (rate := s.hit_rate) is not None]
        return functools.reduce(operator.add, rates) if rates else None

    def segments(self) -> tuple[np.ndarray, ...]:
        """Each slice's activations, oldest first: the segments the placement planner holds out."""
        return tuple(s.counts for s in self._slices)

    def points(self) -> tuple[HitRatePoint, ...]:
        return tuple(
            HitRatePoint(s.end, s.hit_rate.rate if s.hit_rate else None, s.activations, s.passes)
            for s in self._slices
        )
