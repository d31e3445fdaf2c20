"""The simulated engine's expert routing: which experts each token activates, and what that costs.

Popularity model (per MoE layer, over its routed experts):
    p = BASE_SHARE * zipf(base permutation) + (1 - BASE_SHARE) * zipf(topic permutation)
The base permutation is fixed, so some experts are hot in every conversation; the topic permutation is
drawn from a stable hash of the topic key, so different conversations light up different experts.
zipf(perm)[e] ∝ 1 / (perm[e] + 1) ** ZIPF_EXPONENT. Popularity belongs to the (simulated) model, not to
the sampling seed: traffic recorded in one run predicts the next, which is what frequency placement needs.

Sampling: for up to EXACT_TOKEN_LIMIT tokens, each token picks `experts_per_token` distinct experts per
MoE layer (k draws from p, redrawn until distinct: a set S comes up with probability ∝ prod p[S]).
Larger batches (prefill) draw each layer's counts at once from a multinomial of tokens x top-k draws
from p, capped at one hit per token per expert: the with-replacement approximation is off by little
because p stays far below 1/k, and it keeps a 4000-token prefill around a millisecond.

Decode cost: see `RoutingModel.decode_seconds_per_token`.
"""

from __future__ import annotations

import hashlib
import re
import threading
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from launch.model_config import ModelShape

ZIPF_EXPONENT = 1.0
BASE_SHARE = 0.4
EXACT_TOKEN_LIMIT = 32
# A decode step whose routed activations all land on CPU experts takes (1 + this) times as long as one
# that stays on the GPU: CPU experts stream weights from DRAM at a fraction of HBM bandwidth, partly
# hidden behind the GPU's share of the layer.
CPU_EXPERT_SLOWDOWN = 3.0

_KEYWORD = re.compile(r"[^\W\d_]{4,}")
_FILLER_WORDS = frozenset({
    "about", "also", "could", "does", "explain", "from", "give", "have", "help", "into", "just", "like", "make",
    "please", "should", "some", "tell", "than", "that", "their", "them", "then", "there", "these", "they",
    "this", "what", "when", "where", "which", "with", "would", "write", "your",
})  # fmt: skip


@dataclass(frozen=True)
class RoutedBatch:
    """The routing of one batch of tokens."""

    counts: np.ndarray  # int32 [num_layers, num_experts]: activations per expert, zero rows for dense layers
    gpu_hit_share: float  # share of the activations that hit GPU-resident experts (1.0 when there are none)
    activations: int  # counts.sum()


def topic_key(prompt: str, max_words: int = 3) -> str:
    """A conversation's topic: its first few content words, lower-cased (pass the first user message)."""
    words = [word.lower() for word in _KEYWORD.findall(prompt)]
    keywords = [word for word in words if word not in _FILLER_WORDS][:max_words]
    return " ".join(keywords) or prompt.strip().lower()[:32]


class RoutingModel:
    """Routes tokens through the MoE layers of `shape`; `gpu_mask` [num_layers, num_experts] says what is on GPU."""

    def __init__(self, shape: ModelShape, gpu_mask: np.ndarray, seed: int = 0) -> None:
        expected = (shape.num_layers, shape.num_routed_experts)
        if gpu_mask.shape != expected:
            raise ValueError(f"gpu_mask has shape {gpu_mask.shape}, expected {expected}")
        if not 0 < shape.experts_per_token <= shape.num_routed_experts:
            raise ValueError(f"cannot route top-{shape.experts_per_token} of {shape.num_routed_experts} experts")
        self._shape = shape
        self._moe_rows = np.asarray(shape.moe_layer_ids, dtype=np.intp)
        self._moe_gpu_mask = gpu_mask[self._moe_rows].astype(bool)
        self._rng = np.random.default_rng(seed)
        self._lock = threading.Lock()  # numpy Generators are not thread-safe; handlers route concurrently

    def popularity(self, topic: str) -> np.ndarray:
        """float64 [num_moe_layers, num_experts], rows summing to 1: the routing probabilities for `topic`."""
        moe_layers, experts = len(self._moe_rows), self._shape.num_routed_experts
        base = _zipf_rows((0,), moe_layers, experts)
        topical = _zipf_rows((1, _stable_hash(topic)), moe_layers, experts)
        return BASE_SHARE * base + (1.0 - BASE_SHARE) * topical

    def route(self, topic: str, num_tokens: int) -> RoutedBatch:
        """Route `num_tokens` tokens of a conversation about `topic` through every MoE layer."""
        if num_tokens < 0:
            raise ValueError(f"num_tokens must be >= 0, got {num_tokens}")
        counts = np.zeros((self._shape.num_layers, self._shape.num_routed_experts), dtype=np.int32)
        if num_tokens == 0 or len(self._moe_rows) == 0:
            return RoutedBatch(counts, 1.0, 0)
        probabilities = self.popularity(topic)
        with self._lock:
            if num_tokens <= EXACT_TOKEN_LIMIT:
                moe_counts = self._exact_counts(probabilities, num_tokens)
            else:
                moe_counts = np.minimum(
                    self._rng.multinomial(num_tokens * self._shape.experts_per_token, probabilities), num_tokens
                )
        counts[self._moe_rows] = moe_counts
        activations = int(moe_counts.sum())
        hits = int(moe_counts[self._moe_gpu_mask].sum())
        return RoutedBatch(counts, hits / activations if activations else 1.0, activations)

    def _exact_counts(self, probabilities: np.ndarray, num_tokens: int) -> np.ndarray:
        """Each token draws top-k experts per layer from p with replacement, redrawn until all are distinct."""
        moe_layers, experts = probabilities.shape
        top_k = self._shape.experts_per_token
        cdf = np.cumsum(probabilities, axis=1)
        cdf /= cdf[:, -1:]
        # Offsetting row l by l lets one searchsorted serve every layer; the clip guards u rounding up to l + 1.
        flat_cdf = (cdf + np.arange(moe_layers)[:, None]).ravel()
        row_last = np.arange(moe_layers) * experts + experts - 1
        picks = np.empty((num_tokens, moe_layers, top_k), dtype=np.intp)
        pending = np.ones((num_tokens, moe_layers), dtype=bool)
        while pending.any():
            tokens, layers = np.nonzero(pending)
            u = self._rng.random((len(layers), top_k)) + layers[:, None]
            draws = np.minimum(np.searchsorted(flat_cdf, u, side="right"), row_last[layers, None])
            picks[tokens, layers] = draws
            ordered = np.sort(draws, axis=1)
            pending[tokens, layers] = (ordered[:, 1:] == ordered[:, :-1]).any(axis=1)
        return np.bincount(picks.ravel(), minlength=moe_layers * experts).reshape(moe_layers, experts)

    @staticmethod
    def decode_seconds_per_token(gpu_hit_share: float, base_tps: float) -> float:
        """Seconds one decode step takes: (1 / base_tps) * (1 + CPU_EXPERT_SLOWDOWN * (1 - gpu_hit_share)).

        `base_tps` is the decode speed when every routed activation hits a GPU expert (hit share 1.0, the
        fastest); each activation served by a CPU expert adds time linearly, so an all-CPU step is
        (1 + CPU_EXPERT_SLOWDOWN) times slower.
        """
        if base_tps <= 0:
            raise ValueError(f"base_tps must be > 0, got {base_tps}")
        miss_share = 1.0 - min(max(gpu_hit_share, 0.0), 1.0)
        return (1.0 + CPU_EXPERT_SLOWDOWN * miss_share) / base_tps


def _stable_hash(text: str) -> int:
    """A 64-bit hash that, unlike hash(), is the same in every process."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


@lru_cache(maxsize=256)
def _zipf_rows(entropy: tuple[int, ...], moe_layers: int, experts: int) -> np.ndarray:
    """Per-layer Zipf weights over a random permutation of the experts (cached: topics repeat every turn)."""
    rng = np.random.default_rng(list(entropy))
    ranks = rng.permuted(np.tile(np.arange(experts), (moe_layers, 1)), axis=1)
    weights = 1.0 / (ranks + 1.0) ** ZIPF_EXPONENT
    weights /= weights.sum(axis=1, keepdims=True)
    weights.flags.writeable = False
    return weights
