"""The flags sglang-kt 0.7.2's launch_server accepts (for checking the free-form extra arguments)."""

from pathlib import Path

SGLANG_VERSION = "0.7.2"
_FILE = Path(__file__).with_name("data") / f"sglang-{SGLANG_VERSION}-flags.txt"


def _read() -> frozenset[str]:
    lines = _FILE.read_text(encoding="utf-8").splitlines()
    return frozenset(line.strip() for line in lines if line.strip() and not line.startswith("#"))


SGLANG_FLAGS: frozenset[str] = _read()
