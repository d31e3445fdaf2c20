"""Settings → the engine's argv (never a shell string), its environment, and a copyable rendering.

The rendering is made from the very argv that runs, so the preview can never drift from the launch; only
secrets are masked in it. A launched engine gets its API key through a private config file (launch/config_file.py).
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from launch.config_file import CONFIG_FLAG, secret_config_path
from launch.settings import LaunchSettings, setting_fields

EngineKind = Literal["sglang", "sim"]
SGLANG_MODULE = "sglang.launch_server"
SIM_MODULE = "launch.sim"
RECORDER_DIR_ENV = "SGLANG_EXPERT_DISTRIBUTION_RECORDER_DIR"
REPO_ROOT = Path(__file__).resolve().parent.parent
SECRET_FLAGS = ("--api-key", "--admin-api-key")
SECRET_MASK = "********"


@dataclass(frozen=True)
class Engine:
    """Which program serves the model: the real sglang-kt, or m3ui's simulated engine."""

    kind: EngineKind = "sglang"
    # The engine may live in another venv; "python" is looked up on PATH at launch.
    python: str = "python"
    # Set for this process only, e.g. a fleet worker's CUDA_VISIBLE_DEVICES (launch/fleet/).
    env: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Command:
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    cwd: str | None

    def shell_text(self) -> str:
        """A copyable multi-line rendering, one flag per line, in the seed's layout; secrets masked."""
        head = [*(f"{k}={shlex.quote(v)}" for k, v in self.env), *map(shlex.quote, self.argv[:3])]
        lines = [" ".join(head)]
        rest = masked_argv(self.argv[3:])
        i = 0
        while i < len(rest):
            part = [rest[i]]
            i += 1
            while i < len(rest) and not rest[i].startswith("--"):
                part.append(rest[i])
                i += 1
            lines.append("  " + " ".join(map(shlex.quote, part)))
        return " \\\n".join(lines)


def masked_argv(argv: tuple[str, ...] | list[str]) -> list[str]:
    """`argv` with the values of secret flags (`--api-key K` and `--api-key=K`) replaced by a mask."""
    out = list(argv)
    for i, word in enumerate(out):
        if word in SECRET_FLAGS and i + 1 < len(out):
            out[i + 1] = SECRET_MASK
        elif word.startswith(tuple(f"{flag}=" for flag in SECRET_FLAGS)):
            out[i] = f"{word.split('=', 1)[0]}={SECRET_MASK}"
    return out


class CommandError(ValueError):
    """The settings cannot be turned into a command (e.g. unparseable extra arguments)."""


def flag_argv(settings: LaunchSettings) -> list[str]:
    """The flags, in table order: set values, plus the ones the seed always spells out."""
    out: list[str] = []
    for fld in setting_fields():
        value = getattr(settings, fld.name)
        spec = fld.spec
        if spec.kind == "bool":
            if value:
                out.append(spec.flag)
            continue
        if value is None or (value == fld.default and not spec.always):
            continue
        out.append(spec.flag)
        if spec.kind == "int_list":
            out.extend(str(v) for v in value)
        else:
            out.append(_render_scalar(value))
    return out + split_extra_args(settings.extra_args)


def _render_scalar(value: object) -> str:
    if isinstance(value, float):
        return repr(value)
    return str(value)


def split_extra_args(text: str) -> list[str]:
    try:
        return shlex.split(text or "")
    except ValueError as exc:
        raise CommandError(f"extra arguments: {exc} (check the quotes)") from None


def key_on_argv(settings: LaunchSettings) -> bool:
    """The API key must go on the command line: the extra arguments bring their own `--config` file, and
    sglang reads only one."""
    return bool(settings.api_key) and CONFIG_FLAG in split_extra_args(settings.extra_args)


def key_in_config_file(settings: LaunchSettings) -> bool:
    return bool(settings.api_key) and not key_on_argv(settings)


def build_command(settings: LaunchSettings, engine: Engine = Engine(), run_dir: Path | None = None) -> Command:
    """The argv and environment that launch `settings` on `engine`.

    The simulated engine runs under this Python (it ships with m3ui); the recorder folder lives in the
    run folder so that dumps are found and cleaned up with the run. With a run folder, the API key goes
    into its private config file (the supervisor writes it), so `ps` never shows it.
    """
    if engine.kind == "sim":
        head = [sys.executable, "-m", SIM_MODULE]
        cwd: str | None = str(REPO_ROOT)
    else:
        head = [engine.python, "-m", SGLANG_MODULE]
        cwd = None
    env: list[tuple[str, str]] = list(engine.env)
    if settings.expert_distribution_recorder_mode and run_dir is not None:
        env.append((RECORDER_DIR_ENV, str(run_dir / "recorder")))
    if run_dir is not None and key_in_config_file(settings):
        flags = [*flag_argv(settings.replace(api_key=None)), CONFIG_FLAG, str(secret_config_path(run_dir))]
    else:
        flags = flag_argv(settings)
    return Command(tuple(head + flags), tuple(env), cwd)
