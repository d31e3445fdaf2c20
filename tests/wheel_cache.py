"""The real sglang-kt / kt-kernel 0.7.2 wheels, downloaded once (pip download --no-deps) and cached."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache"


def find_wheel(dist: str, version: str) -> Path | None:
    stem = dist.replace("-", "_")
    found = sorted((CACHE / "wheels").glob(f"{stem}-{version}-*.whl"))
    return found[0] if found else None


def download_wheel(dist: str, version: str) -> Path:
    """Provisioning (scripts/test.sh, before the tests): `pip download --no-deps` into the cache."""
    found = find_wheel(dist, version)
    if found:
        return found
    (CACHE / "wheels").mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
                    "--only-binary=:all:", "-d", str(CACHE / "wheels"), f"{dist}=={version}"],
                   check=True, timeout=1800)
    found = find_wheel(dist, version)
    assert found is not None, f"pip downloaded no {dist}=={version} wheel"
    return found


def fetch_wheel(dist: str, version: str) -> Path:
    """The cached wheel; tests never download (skips with the reason when it was not provisioned)."""
    found = find_wheel(dist, version)
    if found is None:
        pytest.skip(f"{dist}=={version} wheel not provisioned: run `python -m tests.provision` (scripts/test.sh does)")
    return found


def unpack(wheel: Path, *prefixes: str) -> Path:
    """Extract the members under `prefixes` once; returns the folder holding them."""
    dest = CACHE / "unpacked" / wheel.stem
    with zipfile.ZipFile(wheel) as zf:
        for name in zf.namelist():
            if name.startswith(prefixes) and not (dest / name).exists():
                zf.extract(name, dest)
    return dest
