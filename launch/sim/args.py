"""The simulated engine's command line: sglang-kt's own flags, parsed as its argparse parser does.

Flags m3ui drives come from the launch settings table (type, arity, choices), so the sim accepts exactly
what the command builder emits. Every other flag sglang-kt 0.7.2 knows is accepted too (an operator's
extra arguments must not break the sim where the real engine would start) and kept as text; anything
else is rejected with argparse's own `unrecognized arguments` error and exit status 2.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from launch.config_file import merge_config_file
from launch.settings import LaunchSettings, SettingField, setting_fields
from launch.sglang_flags import SGLANG_FLAGS

PROG = "python -m launch.sim"
# sglang's parser declares no argparse choices for these (an unknown kt-method fails in kt-kernel, an unknown
# recorder mode with a KeyError at start), so the sim must not reject them at parse time either.
FREE_VALUE_FLAGS = frozenset({"--kt-method", "--expert-distribution-recorder-mode"})
_TYPES = {"int": int, "float": float, "int_list": int}


@dataclass(frozen=True)
class SimArgs:
    settings: LaunchSettings
    # Known sglang flags outside the settings table: dest name -> the words that followed the flag.
    passthrough: tuple[tuple[str, tuple[str, ...]], ...]

    def passthrough_value(self, dest: str) -> tuple[str, ...] | None:
        return dict(self.passthrough).get(dest)


def _add_setting(parser: argparse.ArgumentParser, fld: SettingField) -> None:
    spec = fld.spec
    if spec.kind == "bool":
        parser.add_argument(spec.flag, dest=fld.name, action="store_true", help=spec.help)
        return
    kwargs: dict[str, Any] = {"dest": fld.name, "default": fld.default, "help": spec.help,
                                 "type": _TYPES.get(spec.kind, str)}
    if spec.kind == "int_list":
        kwargs["nargs"] = "+"
    if spec.choices and spec.flag not in FREE_VALUE_FLAGS:
        kwargs["choices"] = spec.choices
    parser.add_argument(spec.flag, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="m3ui's simulated sglang-kt engine (MiniMax-M3).")
    fields = setting_fields()
    for fld in fields:
        _add_setting(parser, fld)
    own = {fld.spec.flag for fld in fields}
    for flag in sorted(SGLANG_FLAGS - own - {"--help"}):
        parser.add_argument(flag, nargs="*", default=None, help=argparse.SUPPRESS)
    return parser


def parse_sim_args(argv: Sequence[str]) -> SimArgs:
    """Parse like sglang's launch_server; exits with status 2 on an unknown flag or a bad value."""
    namespace = vars(build_parser().parse_args(merge_config_file(argv)))  # sglang reads --config first
    values = {fld.name: namespace.pop(fld.name) for fld in setting_fields()}
    if values["kt_numa_nodes"] is not None:
        values["kt_numa_nodes"] = tuple(values["kt_numa_nodes"])
    passthrough = tuple(sorted((k, tuple(v)) for k, v in namespace.items() if v is not None))
    return SimArgs(LaunchSettings(**values), passthrough)
