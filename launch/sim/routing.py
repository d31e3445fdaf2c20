"""The simulated engine's expert routing: which experts each token activates, and what that costs.

Popularity (per MoE layer l at depth d = 0..1, over its routed experts) is a softmax of logits:
    BASE(d) * z_model + TOPIC(d) * z_topic + REQUEST * z_request + DRIFT * z_drift(clock)
- z_model: fixed per (layer, expert): some experts are busy in every conversation (the model's own bias);
- z_topic: drawn from a stable hash of the conversation's topic: a domain lights up its own experts;
- z_request: drawn from the request id: a request keeps coming back to its experts (sticky within a request);
- z_drift: rotates slowly with the tokens the engine has routed (one turn per DRIFT_PERIOD_TOKENS).
BASE grows with depth (skew tends to grow with depth), so layers differ in concentration. The scales are
fitted so that mixed traffic is near-balanced, one domain or one request is clearly skewed, a frequency
placement built on one topic mix keeps about half its gain on another, and frequency over uniform gives
the published decode gains through `launch.decode_speed` (see there; `benchmarks/bench_placement.py`
prints them). Facts behind the shape, as cited in m3ui issue 13: KTransformers' expert-scheduling tutorial
(Qwen3-Next-80B-A3B-FP8, TP4, ShareGPT) and the observation that routing is near-balanced over mixed
traffic, skewed within a domain or a short window, and uneven across layers.
Popularity belongs to the (simulated) model, not to the sampling seed: traffic recorded in one run predicts
the next, which is what frequency placement needs.

Sampling: for up to EXACT_TOKEN_LIMIT tokens, each token picks `experts_per_token` distinct experts per
MoE layer (k draws from p, redrawn until distinct: a set S comes up with probability ∝ prod p[S]).
Larger batches (prefill) draw each layer's counts at once from a multinomial of tokens x top-k draws
from p, capped at one hit per token per expert: the with-replacement approximation is off by little
because p stays far below 1/k, and it keeps a 4000-token prefill around a millisecond.

Decode cost: `launch.decode_speed` (the same model the placement planner predicts with).
"""

from __future__ import annotations

import hashlib
import re
import threading
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from launch.decode_speed import relative_step_time
from launch.model_config import ModelShape

BASE_SCALE = (0.11, 0.37)  # logit scale of the model's own bias at the first and the last MoE layer
TOPIC_SCALE = (0.55, 0.58)  # the same for the topic's tilt
REQUEST_SCALE = 0.16
DRIFT_SCALE = 0.05
DRIFT_PERIOD_TOKENS = 5_000_000
DRIFT_STEPS = 256  # the drift moves in this many steps per turn, so popularity can be cached between steps
EXACT_TOKEN_LIMIT = 32

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
    step_time: float  # a decode step of this routing relative to an all-GPU one (launch.decode_speed)


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
        self._tokens_routed = 0  # the drift's clock
        self._lock = threading.Lock()  # numpy Generators are not thread-safe; handlers route concurrently

    def popularity(self, topic: str, request: str = "", tokens_routed: int = 0) -> np.ndarray:
        """float64 [num_moe_layers, num_experts], rows summing to 1: the routing probabilities of a request
        `request` about `topic` after the engine routed `tokens_routed` tokens ("" : no request tilt)."""
        step = int(tokens_routed * DRIFT_STEPS // DRIFT_PERIOD_TOKENS) % DRIFT_STEPS
        return _popularity(_stable_hash(topic), _stable_hash(request) if request else None, step,
                           len(self._moe_rows), self._shape.num_routed_experts)

    def route(self, topic: str, num_tokens: int, request: str = "") -> RoutedBatch:
        """Route `num_tokens` tokens of request `request` in a conversation about `topic` through every MoE layer."""
        if num_tokens < 0:
            raise ValueError(f"num_tokens must be >= 0, got {num_tokens}")
        counts = np.zeros((self._shape.num_layers, self._shape.num_routed_experts), dtype=np.int32)
        if num_tokens == 0 or len(self._moe_rows) == 0:
            return RoutedBatch(counts, 1.0, 0, 1.0)
        with self._lock:
            probabilities = self.popularity(topic, request, self._tokens_routed)
            self._tokens_routed += num_tokens
            if num_tokens <= EXACT_TOKEN_LIMIT:
                moe_counts = self._exact_counts(probabilities, num_tokens)
            else:
                moe_counts = np.minimum(
                    self._rng.multinomial(num_tokens * self._shape.experts_per_token, probabilities), num_tokens
                )
        counts[self._moe_rows] = moe_counts
        activations = int(moe_counts.sum())
        hits = int(moe_counts[self._moe_gpu_mask].sum())
        # The step's time follows the expected misses (the popularity), not this handful of draws: the speed
        # model is stated for a layer's miss share over many tokens, which is what the planner predicts from.
        expected_misses = 1.0 - (probabilities * self._moe_gpu_mask).sum(axis=1)
        step = relative_step_time(expected_misses, self._shape.experts_per_token)
        return RoutedBatch(counts, hits / activations if activations else 1.0, activations, step)

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


def _stable_hash(text: str) -> int:
    """A 64-bit hash that, unlike hash(), is the same in every process."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


@lru_cache(maxsize=512)
def _popularity(topic: int, request: int | None, drift_step: int, moe_layers: int, experts: int) -> np.ndarray:
    """Softmax over the logits of the module docstring (cached: a request asks for its own every token)."""
    depth = np.linspace(0.0, 1.0, moe_layers)[:, None] if moe_layers > 1 else np.zeros((1, 1))
    logits = (BASE_SCALE[0] + (BASE_SCALE[1] - BASE_SCALE[0]) * depth) * _normal_logits((0,), moe_layers, experts)
    logits = logits + (TOPIC_SCALE[0] + (TOPIC_SCALE[1] - TOPIC_SCALE[0]) * depth) * _normal_logits(
        (1, topic), moe_layers, experts)
    if request is not None:
        logits = logits + REQUEST_SCALE * _normal_logits((2, request), moe_layers, experts)
    angle = 2 * np.pi * drift_step / DRIFT_STEPS
    logits = logits + DRIFT_SCALE * (np.cos(angle) * _normal_logits((3, 0), moe_layers, experts)
                                     + np.sin(angle) * _normal_logits((3, 1), moe_layers, experts))
    weights = np.exp(logits - logits.max(axis=1, keepdims=True))
    weights /= weights.sum(axis=1, keepdims=True)
    weights.flags.writeable = False
    return weights


@lru_cache(maxsize=64)
def _normal_logits(entropy: tuple[int, ...], moe_layers: int, experts: int) -> np.ndarray:
    """Standard normal [moe_layers, experts] from a fixed seed (the model's, a topic's, a request's)."""
    values = np.random.default_rng(list(entropy)).standard_normal((moe_layers, experts))
    values.flags.writeable = False
    return values
