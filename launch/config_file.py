"""sglang's `--config FILE.yaml`: how the engine gets its API key without the key on its command line.

sglang-kt 0.7.2 reads the key from `--api-key` only (no environment variable), but `prepare_server_args`
(server_args.py) first merges a `--config` YAML file into the arguments (server_args_config_parser.py): its
keys become flags, placed before the command line's own, in-process. So m3ui writes `api-key` into a 0600
file in the run folder and passes `--config <file>`: `ps` shows the path, never the key. sglang accepts one
`--config` only, so when the operator's extra arguments bring their own, the key stays on the command line.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from launch.private_files import write_private

CONFIG_FLAG = "--config"
SECRET_CONFIG_NAME = "engine-secrets.yaml"


def secret_config_path(run_dir: Path) -> Path:
    return run_dir / SECRET_CONFIG_NAME


def write_secret_config(run_dir: Path, api_key: str) -> Path:
    path = secret_config_path(run_dir)
    write_private(path, yaml.safe_dump({"api-key": api_key}))
    return path


def merge_config_file(argv: Sequence[str]) -> list[str]:
    """The arguments as sglang parses them after reading `--config FILE.yaml`: the file's keys as flags
    first (so the command line wins), `--config FILE` removed. Raises ValueError as sglang does."""
    args = list(argv)
    where = [i for i, arg in enumerate(args) if arg == CONFIG_FLAG]
    if not where:
        return args
    if len(where) > 1:
        raise ValueError("Multiple config files specified! Only one allowed.")
    i = where[0]
    if i == len(args) - 1:
        raise ValueError("No config file specified after --config flag!")
    path = Path(args[i + 1])
    if path.suffix.lower() not in (".yaml", ".yml"):
        raise ValueError(f"Config file must be YAML format, got: {path.suffix}")
    with open(path, encoding="utf-8") as f:
        data = yaml.safe_load(f) or {}
    if not isinstance(data, dict):
        raise ValueError("Config file must contain a dictionary at root level")
    return [word for key, value in data.items() for word in _flag_words(str(key), value)] + args[:i] + args[i + 2:]


def _flag_words(key: str, value: Any) -> list[str]:
    flag = f"--{key}"
    if isinstance(value, bool):  # m3ui's boolean flags are all store_true: present or absent
        return [flag] if value else []
    if isinstance(value, list):
        return [flag, *map(str, value)] if value else []
    return [flag, str(value)]
