"""The repository stands alone: nothing reads or points outside it, and the docs name files that exist."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The team's folder beside the repository, as a path or as pathlib parts (spelled in pieces: no self-match).
OUTSIDE = ("../" + "shared", '/ "' + 'shared"')
# A repo path as the docs write it: `launch/sim/app.py`, `tests/data/`, `app.py` (globs and placeholders skipped).
DOC_PATH = re.compile(r"`((?:app\.py|README\.md)|(?:launch|m3ui|tests|torchzip|docs|assets|benchmarks|scripts)"
                      r"(?:/[\w.-]+)*/?)`")


def _tracked_text_files() -> list[Path]:
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    paths = [ROOT / name for name in names.decode().split("\0") if name]
    return [p for p in paths if p.is_file() and p.suffix in {".py", ".md", ".sh", ".toml", ".txt", ".cfg", ".yml"}]


def test_no_file_reads_or_cites_a_folder_outside_the_repository() -> None:
    offenders = [str(p.relative_to(ROOT)) for p in _tracked_text_files()
                 if any(mark in p.read_text(encoding="utf-8") for mark in OUTSIDE)]
    assert offenders == []


def test_every_repo_path_the_docs_name_exists() -> None:
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    missing = {f"{doc.name}: {path}" for doc in docs for path in DOC_PATH.findall(doc.read_text(encoding="utf-8"))
               if not (ROOT / path).exists()}
    assert missing == set()
