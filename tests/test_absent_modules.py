"""Gradio's per-event `import matplotlib` (gradio.utils.MatplotlibBackendMananger, entered on every event call and
every streamed frame) must not search sys.path again each time in the app when matplotlib is not installed."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# In a fresh interpreter: build the app as app.py does, then count the path searches one event call makes.
PROBE = """
import importlib.machinery, sys
from pathlib import Path
from gradio.utils import MatplotlibBackendMananger
from m3ui.access import AccessPolicy
from m3ui.services import AppServices
from m3ui.ui.app_view import build_asgi_app

services = AppServices.create(Path(sys.argv[1]), AccessPolicy.from_env("127.0.0.1", None))
try:
    build_asgi_app(services)
    searches = []
    finder = importlib.machinery.PathFinder.find_spec
    importlib.machinery.PathFinder.find_spec = classmethod(
        lambda cls, name, *args, **kwargs: searches.append(name) or finder(name, *args, **kwargs))
    for _ in range(3):
        with MatplotlibBackendMananger():
            pass
    print("searched:", [name for name in searches if name.startswith("matplotlib")])
finally:
    services.close()
"""


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is not None, reason="matplotlib is installed here")
def test_an_event_call_does_not_search_the_path_for_matplotlib(tmp_path):
    done = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / "data")], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={"GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1",
                                                       "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "searched: []" in done.stdout, done.stdout


def test_an_installed_module_is_left_alone():
    from m3ui.ui.gradio_contacts.absent_modules import mark_absent

    assert mark_absent(("json",)) == []
    assert sys.modules["json"] is not None
