"""The HTTP library under the openai SDK: httpx for openai 2.x (sglang-kt pins 2.6.1), httpx2 for 3.x.

Errors while reading a stream come straight from it, and a custom http_client must be of its kind.
"""

from __future__ import annotations

import importlib
from types import ModuleType

import openai


def _sdk_http_library() -> ModuleType:
    return importlib.import_module(type(openai.DEFAULT_CONNECTION_LIMITS).__module__.split(".")[0])


http: ModuleType = _sdk_http_library()
