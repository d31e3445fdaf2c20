"""Profiles: named launch settings plus the engine choice, saved as JSON files that round-trip exactly
(0600 in a 0700 folder: the settings include the engine's API key)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from launch.command import Engine
from launch.private_files import write_private
from launch.restart_policy import RestartPolicy, RestartPolicyError, policy_from_mapping
from launch.settings import LaunchSettings, SettingsError, from_mapping, to_mapping

FORMAT = "m3ui-profile/1"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._-]{0,63}$")


@dataclass(frozen=True)
class Profile:
    name: str
    settings: LaunchSettings = field(default_factory=LaunchSettings)
    engine: Engine = field(default_factory=Engine)
    start_with_app: bool = False
    restart: RestartPolicy = field(default_factory=RestartPolicy)  # applies when it starts with the app


class ProfileError(ValueError):
    pass


def validate_name(name: str) -> str:
    if not _NAME.match(name or "") or name.strip() != name:
        raise ProfileError(
            f"profile name {name!r}: use 1-64 letters, digits, spaces, '.', '_' or '-', starting with a letter "
            "or digit")
    return name


def profile_to_json(profile: Profile) -> str:
    doc = {
        "format": FORMAT,
        "name": profile.name,
        "engine": {"kind": profile.engine.kind, "python": profile.engine.python},
        "start_with_app": profile.start_with_app,
        "auto_restart": profile.restart.to_mapping(),
        "settings": to_mapping(profile.settings),
    }
    return json.dumps(doc, indent=2, sort_keys=False) + "\n"


def profile_from_json(text: str) -> Profile:
    try:
        doc: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProfileError(f"not valid JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ProfileError(f"not an m3ui profile (expected \"format\": \"{FORMAT}\")")
    engine = doc.get("engine") or {}
    if not isinstance(engine, dict):
        raise ProfileError("profile engine must be an object")
    kind = engine.get("kind", "sglang")
    if kind not in ("sglang", "sim"):
        raise ProfileError(f"engine kind {kind!r}: use 'sglang' or 'sim'")
    python = engine.get("python", "python")
    if not isinstance(python, str) or not python.strip():
        raise ProfileError("engine python must be a path or a command name")
    settings = doc.get("settings")
    if not isinstance(settings, dict):
        raise ProfileError("profile has no settings object")
    try:
        parsed = from_mapping(settings)
        restart = policy_from_mapping(doc.get("auto_restart"))
    except (SettingsError, RestartPolicyError) as exc:
        raise ProfileError(str(exc)) from None
    return Profile(validate_name(str(doc.get("name", ""))), parsed, Engine(kind, python),
                   bool(doc.get("start_with_app", False)), restart)


def save_profile(profile: Profile, path: Path) -> None:
    """Atomically, owner-only: a profile may hold the engine's API key."""
    write_private(path, profile_to_json(profile))


def load_profile(path: Path) -> Profile:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ProfileError(f"cannot read profile {path}: {exc.strerror or exc}") from None
    return profile_from_json(text)


class ProfileStore:
    """A folder of `<name>.json` profiles."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path_for(self, name: str) -> Path:
        return self.folder / f"{validate_name(name)}.json"

    def names(self) -> list[str]:
        if not self.folder.is_dir():
            return []
        return sorted(p.stem for p in self.folder.glob("*.json"))

    def load(self, name: str) -> Profile:
        return load_profile(self.path_for(name))

    def save(self, profile: Profile) -> None:
        if profile.start_with_app:
            for other in self.names():
                if other != profile.name:
                    prev = self.load(other)
                    if prev.start_with_app:
                        save_profile(replace(prev, start_with_app=False), self.path_for(other))
        save_profile(profile, self.path_for(profile.name))

    def delete(self, name: str) -> None:
        self.path_for(name).unlink(missing_ok=True)

    def startup_profile(self) -> Profile | None:
        for name in self.names():
            profile = self.load(name)
            if profile.start_with_app:
                return profile
        return None
