"""The preset picker: the reference presets and the saved profiles, applied to what the form holds.

A reference preset describes a deployment's shape (KT split, TP, memory, parsers); where this site keeps
its model, which address the engine listens on, its API key and the monitoring switches are the
operator's, so applying a preset keeps them. A saved profile is applied whole, engine choice included.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from launch.command import Engine
from launch.presets import PRESET_TITLES, preset
from launch.profile import ProfileStore
from launch.settings import LaunchSettings, setting_fields

# Fields a reference preset leaves as the operator set them.
SITE_FIELDS = ("model_path", "kt_weight_path", "host", "port", "api_key", "extra_args") + tuple(
    f.name for f in setting_fields() if f.spec.group == "monitoring")
PRESET_PREFIX, PROFILE_PREFIX = "preset:", "profile:"


@dataclass(frozen=True)
class Choice:
    label: str
    key: str  # "preset:<name>" or "profile:<name>"
    kind: Literal["preset", "profile"]


def preset_choices(store: ProfileStore) -> tuple[Choice, ...]:
    presets = [Choice(f"Preset: {title}", PRESET_PREFIX + name, "preset") for name, title in PRESET_TITLES.items()]
    profiles = [Choice(f"Profile: {name}", PROFILE_PREFIX + name, "profile") for name in store.names()]
    return tuple(presets + profiles)


def apply_preset(name: str, current: LaunchSettings) -> LaunchSettings:
    """The preset's deployment with the current site fields; a model path is needed to spell the preset."""
    model = current.model_path or None
    base = preset(name, model) if model else preset(name)
    site = {f: getattr(current, f) for f in SITE_FIELDS}
    if not current.kt_weight_path:
        site.pop("kt_weight_path")  # the preset's own choice: the model folder holds M3's expert weights
    return base.replace(**site)


def apply_choice(key: str, current: LaunchSettings, engine: Engine,
                 store: ProfileStore) -> tuple[LaunchSettings, Engine]:
    """What the form holds after picking `key` (raises ValueError / ProfileError with the reason)."""
    if key.startswith(PRESET_PREFIX):
        return apply_preset(key.removeprefix(PRESET_PREFIX), current), engine
    if key.startswith(PROFILE_PREFIX):
        profile = store.load(key.removeprefix(PROFILE_PREFIX))
        return profile.settings, profile.engine
    raise ValueError(f"unknown choice {key!r}")
