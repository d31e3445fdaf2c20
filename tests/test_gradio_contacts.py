"""docs/GRADIO.md lists every place m3ui reaches past Gradio's public API, checked against one Gradio version: a
different Gradio installed fails here naming the rows to re-check, and a private Gradio import outside
m3ui/ui/gradio_contacts/ fails too (a new contact goes there, and into the table)."""

import importlib.metadata
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "GRADIO.md"
HOME = ROOT / "m3ui" / "ui" / "gradio_contacts"
CHECKED = re.compile(r"Checked against Gradio \*\*([0-9][^*]*)\*\*")
ROW = re.compile(r"^\| ([PWJ]\d+) \| (.+?) \|", re.MULTILINE)
# Gradio's own modules m3ui may import anywhere: its public component classes and their types.
PUBLIC_MODULES = ("gradio.components",)
GRADIO_IMPORT = re.compile(r"^\s*(?:from|import) (gradio\.[\w.]+)", re.MULTILINE)


def rows() -> dict[str, str]:
    return dict(ROW.findall(DOC.read_text()))


def test_the_installed_gradio_is_the_one_the_contacts_were_checked_against() -> None:
    checked = CHECKED.search(DOC.read_text())
    assert checked, "docs/GRADIO.md names no Gradio version it was checked against"
    installed = importlib.metadata.version("gradio")
    table = "\n".join(f"  {row}: {contact}" for row, contact in rows().items())
    assert installed == checked.group(1), (
        f"Gradio {installed} is installed; docs/GRADIO.md was checked against {checked.group(1)}. Re-check each "
        f"row (its test, and what it touches in Gradio's source), then change the version there:\n{table}")


def test_every_contact_module_has_its_row() -> None:
    listed = DOC.read_text()
    modules = [p.name for p in HOME.glob("*.py") if p.name != "__init__.py"]
    assert modules, "m3ui/ui/gradio_contacts/ holds no module"
    assert [name for name in modules if f"`{name}`" not in listed] == []
    assert len(rows()) >= len(modules)


def test_no_private_gradio_import_outside_the_contacts_home() -> None:
    found = []
    for path in [ROOT / "app.py", *(ROOT / "m3ui").rglob("*.py")]:
        if HOME in path.parents:
            continue
        for module in GRADIO_IMPORT.findall(path.read_text()):
            if not module.startswith(PUBLIC_MODULES):
                found.append(f"{path.relative_to(ROOT)}: {module}")
    assert found == [], "move these into m3ui/ui/gradio_contacts/ and add their rows to docs/GRADIO.md"
