"""The real sglang-kt / kt-kernel 0.7.2 wheels, downloaded once (pip download --no-deps) and cached."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache"
# Where a developer machine may already hold them (pip download -d /tmp/wheels ...).
EXTRA_DIRS = (Path("/tmp/wheels"),)


def fetch_wheel(dist: str, version: str) -> Path:
    """Path of `dist==version`'s wheel; skips the test (with the reason) only when it cannot be had."""
    stem = dist.replace("-", "_")
    for folder in (CACHE / "wheels", *EXTRA_DIRS):
        found = sorted(folder.glob(f"{stem}-{version}-*.whl"))
        if found:
            return found[0]
    (CACHE / "wheels").mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
         "-d", str(CACHE / "wheels"), f"{dist}=={version}"],
        capture_output=True, text=True, timeout=900,
    )
    found = sorted((CACHE / "wheels").glob(f"{stem}-{version}-*.whl"))
    if not found:
        pytest.skip(f"cannot download {dist}=={version}: {proc.stderr.strip()[-300:]}")
    return found[0]


def unpack(wheel: Path, *prefixes: str) -> Path:
    """Extract the members under `prefixes` once; returns the folder holding them."""
    dest = CACHE / "unpacked" / wheel.stem
    with zipfile.ZipFile(wheel) as zf:
        for name in zf.namelist():
            if name.startswith(prefixes) and not (dest / name).exists():
                zf.extract(name, dest)
    return dest
