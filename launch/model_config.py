"""The model's shape, read from its own config.json (never hard-coded).

MiniMax-M3 nests the language model under `text_config`; other MoE checkpoints keep it at the top level
and name things differently (n_routed_experts, moe_intermediate_size, first_k_dense_replace), so the
reader accepts the common spellings.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The M3-shaped config shipped for the simulated engine and for sizing without a download.
BUNDLED_M3_CONFIG = Path(__file__).resolve().parent.parent / "assets" / "minimax-m3" / "config.json"


class ModelConfigError(ValueError):
    """config.json is missing, unreadable or lacks a dimension the sizing needs."""


@dataclass(frozen=True)
class ModelShape:
    model_type: str
    num_layers: int
    moe_layer_ids: tuple[int, ...]
    hidden_size: int
    moe_intermediate_size: int
    dense_intermediate_size: int
    num_routed_experts: int
    experts_per_token: int
    num_shared_experts: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    max_positions: int
    tie_word_embeddings: bool
    sparse_layer_ids: tuple[int, ...]
    sparse_index_dim: int
    quant_method: str | None

    @property
    def num_moe_layers(self) -> int:
        return len(self.moe_layer_ids)

    @property
    def first_moe_layer(self) -> int:
        return self.moe_layer_ids[0] if self.moe_layer_ids else self.num_layers


def _first(cfg: dict[str, Any], *keys: str, default: Any = None) -> Any:
    for key in keys:
        if cfg.get(key) is not None:
            return cfg[key]
    return default


def _moe_layer_ids(cfg: dict[str, Any], num_layers: int) -> tuple[int, ...]:
    freq = cfg.get("moe_layer_freq")
    if isinstance(freq, list):
        return tuple(i for i, f in enumerate(freq[:num_layers]) if f)
    first_dense = int(_first(cfg, "first_k_dense_replace", default=0) or 0)
    step = int(freq) if isinstance(freq, int) and freq > 0 else 1
    return tuple(i for i in range(first_dense, num_layers) if (i - first_dense) % step == 0)


def parse_model_config(raw: dict[str, Any]) -> ModelShape:
    """Pure: a parsed config.json → ModelShape. Raises ModelConfigError naming the missing key."""
    text: dict[str, Any] = raw.get("text_config") if isinstance(raw.get("text_config"), dict) else raw  # type: ignore[assignment]  # a dict: checked on this line

    def need(*keys: str) -> int:
        value = _first(text, *keys)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ModelConfigError(f"config.json has no positive integer {' / '.join(keys)}")
        return value

    num_layers = need("num_hidden_layers")
    hidden = need("hidden_size")
    heads = need("num_attention_heads")
    moe_ids = _moe_layer_ids(text, num_layers)
    sparse = text.get("sparse_attention_config") or {}
    sparse_freq = sparse.get("sparse_attention_freq") or []
    quant = raw.get("quantization_config") or text.get("quantization_config") or {}
    return ModelShape(
        model_type=str(raw.get("model_type") or text.get("model_type") or "unknown"),
        num_layers=num_layers,
        moe_layer_ids=moe_ids,
        hidden_size=hidden,
        moe_intermediate_size=need("moe_intermediate_size", "intermediate_size"),
        dense_intermediate_size=int(_first(text, "dense_intermediate_size", "intermediate_size", default=0)),
        num_routed_experts=need("num_local_experts", "n_routed_experts", "num_experts"),
        experts_per_token=need("num_experts_per_tok"),
        num_shared_experts=int(_first(text, "n_shared_experts", "num_shared_experts", default=0) or 0),
        num_heads=heads,
        num_kv_heads=int(_first(text, "num_key_value_heads", default=heads)),
        head_dim=int(_first(text, "head_dim", default=hidden // heads)),
        vocab_size=need("vocab_size"),
        max_positions=int(_first(text, "max_position_embeddings", default=0) or 0),
        tie_word_embeddings=bool(_first(text, "tie_word_embeddings", default=raw.get("tie_word_embeddings", False))),
        sparse_layer_ids=tuple(i for i, f in enumerate(sparse_freq) if f),
        sparse_index_dim=int(sparse.get("sparse_index_dim") or 0),
        quant_method=(str(quant["quant_method"]).lower() if quant.get("quant_method") else None),
    )


def load_model_shape(model_path: str | Path | None) -> ModelShape:
    """Read `<model_path>/config.json` (or the bundled M3 config when model_path is None)."""
    path = BUNDLED_M3_CONFIG if model_path is None else Path(model_path) / "config.json"
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelConfigError(f"no config.json in {path.parent}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelConfigError(f"cannot read {path}: {exc}") from None
    if not isinstance(raw, dict):
        raise ModelConfigError(f"{path} is not a JSON object")
    return parse_model_config(raw)


def load_shape_or_bundled(model_path: str | None) -> ModelShape:
    """The shape of `model_path`'s config.json, or the bundled M3-shaped one when the folder has none (a
    preset's placeholder path): what the simulated engine, the roofline and the tuner plan with."""
    return load_model_shape(model_path if model_path and (Path(model_path) / "config.json").is_file() else None)
