"""Bit-exact ports of the two torch CPU routines the real GPU-expert placement depends on.

sglang-kt's `random` placement keeps `torch.randperm(n, generator=manual_seed(42))[:k]` and its `frequency`
placement keeps the set `torch.topk(freq, k, sorted=False)` returns. Both sets depend on implementation
details (the generator's raw stream, how libstdc++ breaks ties), so the simulated engine reproduces them
step for step instead of approximating; tests/test_placement.py checks both against real torch.

- randperm (ATen `randperm_cpu`, n < 2**32/20): swap i with i + mt19937() % (n - i) for i = 0..n-2.
  torch's CPU generator is a standard 32-bit MT19937 seeded with init_genrand(seed), which is numpy's
  legacy `RandomState(seed)` stream.
- topk (ATen `topk_impl_loop`, largest=True): `std::partial_sort` when k * 64 <= n, else
  `std::nth_element`, over (value, index) pairs compared by value only; the first k pairs are the answer.
  Ported from libstdc++ (GCC's stl_algo.h / stl_heap.h), which the manylinux torch wheels are built with.
"""

from __future__ import annotations

import numpy as np

_Pair = tuple[float, int]


def torch_randperm(n: int, seed: int) -> np.ndarray:
    """`torch.randperm(n, generator=torch.Generator().manual_seed(seed))` on CPU, as int64."""
    legacy = np.random.RandomState(seed).get_state()
    bits = np.random.MT19937()
    bits.state = {"bit_generator": "MT19937", "state": {"key": legacy[1], "pos": legacy[2]}}  # type: ignore[index]  # get_state() is the legacy tuple by default
    offsets = (bits.random_raw(max(n - 1, 0)) % np.arange(n, 1, -1, dtype=np.uint64)).tolist()
    perm = list(range(n))
    for i, offset in enumerate(offsets):
        j = i + offset
        perm[i], perm[j] = perm[j], perm[i]
    return np.asarray(perm, dtype=np.int64)


def torch_topk_indices(values: np.ndarray, k: int) -> np.ndarray:
    """The indices `torch.topk(values, k, largest=True, sorted=False)` returns for a 1-D finite float tensor."""
    n = len(values)
    if not 0 <= k <= n:
        raise ValueError(f"k={k} outside 0..{n}")
    queue: list[_Pair] = list(zip(values.tolist(), range(n), strict=True))
    if k == 0:
        return np.zeros(0, dtype=np.int64)
    if k * 64 <= n:
        _heap_select(queue, 0, k, n)  # partial_sort = heap_select + sort_heap; the sort keeps the set
    else:
        _introselect(queue, 0, k - 1, n, 2 * (n.bit_length() - 1))
    return np.asarray([index for _, index in queue[:k]], dtype=np.int64)


# --- libstdc++, with __comp(a, b) = a.value > b.value (the order "largest first") ----------------------------


def _before(a: _Pair, b: _Pair) -> bool:
    return a[0] > b[0]


def _introselect(q: list[_Pair], first: int, nth: int, last: int, depth_limit: int) -> None:
    while last - first > 3:
        if depth_limit == 0:
            _heap_select(q, first, nth + 1, last)
            q[first], q[nth] = q[nth], q[first]
            return
        depth_limit -= 1
        cut = _unguarded_partition_pivot(q, first, last)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _insertion_sort(q, first, last)


def _unguarded_partition_pivot(q: list[_Pair], first: int, last: int) -> int:
    mid = first + (last - first) // 2
    _move_median_to_first(q, first, first + 1, mid, last - 1)
    return _unguarded_partition(q, first + 1, last, first)


def _move_median_to_first(q: list[_Pair], result: int, a: int, b: int, c: int) -> None:
    if _before(q[a], q[b]):
        pick = b if _before(q[b], q[c]) else c if _before(q[a], q[c]) else a
    else:
        pick = a if _before(q[a], q[c]) else c if _before(q[b], q[c]) else b
    q[result], q[pick] = q[pick], q[result]


def _unguarded_partition(q: list[_Pair], first: int, last: int, pivot: int) -> int:
    while True:
        while _before(q[first], q[pivot]):
            first += 1
        last -= 1
        while _before(q[pivot], q[last]):
            last -= 1
        if not first < last:
            return first
        q[first], q[last] = q[last], q[first]
        first += 1


def _insertion_sort(q: list[_Pair], first: int, last: int) -> None:
    for i in range(first + 1, last):
        value = q[i]
        if _before(value, q[first]):
            q[first + 1 : i + 1] = q[first:i]
            q[first] = value
            continue
        hole = i
        while _before(value, q[hole - 1]):
            q[hole] = q[hole - 1]
            hole -= 1
        q[hole] = value


def _heap_select(q: list[_Pair], first: int, middle: int, last: int) -> None:
    _make_heap(q, first, middle)
    for i in range(middle, last):
        if _before(q[i], q[first]):
            value = q[i]  # __pop_heap(first, middle, i): the heap top goes to i, q[i] sifts in from the root
            q[i] = q[first]
            _adjust_heap(q, first, 0, middle - first, value)


def _make_heap(q: list[_Pair], first: int, last: int) -> None:
    length = last - first
    if length < 2:
        return
    for parent in range((length - 2) // 2, -1, -1):
        _adjust_heap(q, first, parent, length, q[first + parent])


def _adjust_heap(q: list[_Pair], first: int, hole: int, length: int, value: _Pair) -> None:
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if _before(q[first + child], q[first + child - 1]):
            child -= 1
        q[first + hole] = q[first + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        q[first + hole] = q[first + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2  # __push_heap
    while hole > top and _before(q[first + parent], value):
        q[first + hole] = q[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    q[first + hole] = value
