"""docs/ARCHITECTURE.md's map is the code's: every package has its row, and no import runs against the floors."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAP = ROOT / "docs" / "ARCHITECTURE.md"
TOPS = ("launch", "m3ui", "torchzip")
ROW = re.compile(r"^\| (\d+) \| (.+?) \| (.*) \|$")


def _rows() -> tuple[dict[str, int], str]:
    """The map's rows (each path in a row's package cell → its floor) and the whole map's text."""
    text = MAP.read_text(encoding="utf-8")
    section = text.split("## The map", 1)[1].split("\n## ", 1)[0]
    floors: dict[str, int] = {}
    for line in section.splitlines():
        match = ROW.match(line)
        if match:
            for path in re.findall(r"`([\w./]+)`", match.group(2)):
                floors[path.rstrip("/")] = int(match.group(1))
    return floors, section


def _source_files() -> list[Path]:
    """Every source file, less m3ui/__init__.py (the top package holds nothing of its own)."""
    return sorted(p for top in TOPS for p in (ROOT / top).rglob("*.py") if p != ROOT / "m3ui" / "__init__.py")


def _row_of(path: str, floors: dict[str, int]) -> str | None:
    """The longest row path that is this file or a folder above it."""
    hits = [row for row in floors if path == row or path.startswith(row + "/")]
    return max(hits, key=len, default=None)


def _imports(file: Path) -> set[str]:
    """The modules a file imports, as repo paths without suffix (launch/sim/app, m3ui/client)."""
    tree = ast.parse(file.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name.replace(".", "/") for name in names if name.split(".")[0] in TOPS}


def _resolve(module: str) -> str:
    """`m3ui/client/ChatClient` → `m3ui/client` (the longest prefix that is a file or a package)."""
    parts = module.split("/")
    for end in range(len(parts), 0, -1):
        stem = "/".join(parts[:end])
        if (ROOT / f"{stem}.py").is_file() or (ROOT / stem / "__init__.py").is_file():
            return stem + (".py" if (ROOT / f"{stem}.py").is_file() else "")
    return module


def test_every_package_and_module_has_a_row_in_the_map() -> None:
    floors, section = _rows()
    packages = {p.parent.relative_to(ROOT).as_posix() for p in _source_files() if p.name == "__init__.py"} - {"m3ui"}
    # The views' own folders are named in m3ui/ui/'s row; every other package has a row of its own.
    missing = {pkg for pkg in packages if not pkg.startswith("m3ui/ui/") and pkg not in floors}
    missing |= {pkg for pkg in packages if pkg.startswith("m3ui/ui/") and f"{pkg.split('/', 2)[2]}/" not in section}
    loose = {p.relative_to(ROOT).as_posix() for p in (ROOT / "m3ui").glob("*.py") if p.name != "__init__.py"}
    missing |= {module for module in loose if module not in floors}
    assert missing == set(), f"packages or modules without a row in docs/ARCHITECTURE.md's map: {sorted(missing)}"


@functools.cache
def _file_imports() -> dict[str, set[str]]:
    """Each source file → the source files it imports (a package import names its __init__.py)."""
    graph: dict[str, set[str]] = {}
    for file in _source_files():
        targets = set()
        for module in _imports(file):
            stem = _resolve(module)
            target = stem if stem.endswith(".py") else f"{stem}/__init__.py"
            if (ROOT / target).is_file():
                targets.add(target)
        graph[file.relative_to(ROOT).as_posix()] = targets
    return graph


def test_no_import_runs_against_the_floors_of_the_map() -> None:
    floors, _ = _rows()
    against = []
    for path, targets in _file_imports().items():
        own = _row_of(path, floors)
        assert own is not None, f"{path} is in no row of the map"
        for target in targets:
            other = _row_of(target, floors)
            if other is not None and other != own and floors[other] > floors[own]:
                against.append(f"{path} (floor {floors[own]}) imports {target} (floor {floors[other]})")
    assert against == []


def test_no_file_imports_itself_round_a_circle() -> None:
    graph = _file_imports()
    done: set[str] = set()

    def circle_from(path: str, trail: list[str]) -> list[str] | None:
        if path in trail:
            return [*trail[trail.index(path):], path]
        if path in done:
            return None
        for other in sorted(graph.get(path, ())):
            found = circle_from(other, [*trail, path])
            if found:
                return found
        done.add(path)
        return None

    circles = [found for path in sorted(graph) if (found := circle_from(path, []))]
    assert circles == []
