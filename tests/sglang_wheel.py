"""sglang-kt 0.7.2's own output parsers, installed once from the real wheel into a cache folder.

`pip install --no-deps --target .cache/sglang-parsers` of the wheel (downloaded by wheel_cache.fetch_wheel)
plus the few light packages the parser modules import at module level (no torch, no transformers):
jsonschema (function_call_parser), partial-json-parser (function_call/utils), pybase64, requests and
IPython (sglang/utils.py, imported by protocol.py). The venv's own packages keep precedence (the target
is appended to sys.path). The `sglang` package entry is registered from its folder without running
sglang/__init__.py, which imports the frontend language (aiohttp, ...) the parsers never touch; every
parser module itself is the wheel's, unmodified.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import subprocess
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.wheel_cache import CACHE, fetch_wheel

TARGET = CACHE / "sglang-parsers"
PARSER_DEPS = (
    "jsonschema==4.26.0", "jsonschema-specifications==2025.9.1", "referencing==0.37.0", "rpds-py==2026.9.1",
    "attrs==26.1.0", "partial-json-parser==0.2.1.1.post7", "pybase64==1.5.1", "requests==2.34.2",
    "urllib3==2.8.0", "charset-normalizer==3.5.3", "ipython==9.18.1", "traitlets==5.16.1",
)


@dataclass(frozen=True)
class SglangParsers:
    ReasoningParser: Any
    FunctionCallParser: Any
    JsonArrayParser: Any
    Tool: Any


def _stamp(wheel: str) -> Path:
    return TARGET / f".installed-{hashlib.sha256(' '.join((Path(wheel).name, *PARSER_DEPS)).encode()).hexdigest()[:16]}"


def install_parsers(wheel: str) -> None:
    """Provisioning (scripts/test.sh, before the tests): the wheel and the parsers' light dependencies."""
    stamp = _stamp(wheel)
    if stamp.exists():
        return
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps", "--upgrade",
         "--target", str(TARGET), wheel, *PARSER_DEPS],
        check=True, timeout=1800,
    )
    stamp.touch()


def _register_sglang_package() -> None:
    if "sglang" in sys.modules:
        return
    package = types.ModuleType("sglang")
    package.__path__ = [str(TARGET / "sglang")]
    spec = importlib.machinery.ModuleSpec("sglang", None, is_package=True)
    spec.submodule_search_locations = package.__path__
    package.__spec__ = spec
    sys.modules["sglang"] = package


@pytest.fixture(scope="session")
def sglang_parsers() -> SglangParsers:
    wheel = fetch_wheel("sglang-kt", "0.7.2")
    if not _stamp(str(wheel)).exists():
        pytest.skip("sglang-kt's parsers not provisioned: run `python -m tests.provision` (scripts/test.sh does)")
    if str(TARGET) not in sys.path:
        sys.path.append(str(TARGET))
    _register_sglang_package()
    from sglang.srt.entrypoints.openai.protocol import Tool
    from sglang.srt.function_call.function_call_parser import FunctionCallParser
    from sglang.srt.function_call.json_array_parser import JsonArrayParser
    from sglang.srt.parser.reasoning_parser import ReasoningParser

    return SglangParsers(ReasoningParser, FunctionCallParser, JsonArrayParser, Tool)
