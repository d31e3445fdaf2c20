"""Optional modules Gradio imports on every event call, made to fail at once when they are not installed.

Gradio runs every call of an event handler (each frame of a streamed answer too) inside
gradio.utils.MatplotlibBackendMananger, which tries `import matplotlib` on entry and again on exit. Python does
not remember a failed import, so without matplotlib each try searched every folder on sys.path: two path
searches per streamed frame, about 5% of the app's CPU while answers streamed. A None in sys.modules is
Python's own "known missing" mark: the import then fails at once, with the same ImportError.
"""

from __future__ import annotations

import importlib.util
import sys

PER_EVENT_IMPORTS = ("matplotlib",)  # what Gradio tries to import on every event call


def mark_absent(names: tuple[str, ...] = PER_EVENT_IMPORTS) -> list[str]:
    """Mark those of `names` that are not installed as missing in sys.modules; the names marked."""
    marked = []
    for name in names:
        if name not in sys.modules and importlib.util.find_spec(name) is None:
            sys.modules[name] = None  # type: ignore[assignment]  # None in sys.modules: import fails at once
            marked.append(name)
    return marked
