"""Read sglang-kt's argument table from its source with `ast` (never importing it)."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ArgInfo:
    flag: str
    type_name: str | None  # "int", "float", "str", "nullable_str", ... (None: no type=)
    action: str | None  # "store_true", ...
    nargs: str | None
    choices: tuple[str, ...] | None  # None: no choices (or not resolvable statically)


def _module_lists(tree: ast.Module) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.List | ast.Tuple):
            items = [e.value for e in node.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = items
    return out


def _dict_keys(path: Path, attr: str) -> list[str]:
    """Keys of a class-level dict literal named `attr` in the file at `path`."""
    for node in ast.walk(ast.parse(path.read_text())):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == attr for t in targets) and isinstance(node.value, ast.Dict):
            return [k.value for k in node.value.keys if isinstance(k, ast.Constant)]
    raise LookupError(f"{attr} not found in {path}")


def read_server_args(srt: Path) -> dict[str, ArgInfo]:
    """Every `--flag` of `sglang/srt/server_args.py`, with the choices resolved where they are static."""
    tree = ast.parse((srt / "server_args.py").read_text())
    lists = _module_lists(tree)
    local_lists: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value
            if (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "list"
                    and value.args and "ToolCallParserEnum" in ast.unparse(value.args[0])):
                local_lists[node.targets[0].id] = _dict_keys(srt / "function_call" / "function_call_parser.py",
                                                             "ToolCallParserEnum")
    out: dict[str, ArgInfo] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"):
            continue
        flags = [a.value for a in node.args if isinstance(a, ast.Constant) and str(a.value).startswith("--")]
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        choices = _choices(kw.get("choices"), lists, local_lists, srt)
        info = {
            "type_name": ast.unparse(kw["type"]) if "type" in kw else None,
            "action": kw["action"].value if isinstance(kw.get("action"), ast.Constant) else
            (ast.unparse(kw["action"]) if "action" in kw else None),
            "nargs": str(kw["nargs"].value) if isinstance(kw.get("nargs"), ast.Constant) else None,
            "choices": choices,
        }
        for flag in flags:
            out[flag] = ArgInfo(flag, **info)
    return out


def _choices(node: ast.expr | None, lists: dict[str, list[str]], local: dict[str, list[str]],
             srt: Path) -> tuple[str, ...] | None:
    if node is None:
        return None
    if isinstance(node, ast.List | ast.Tuple):
        return tuple(e.value for e in node.elts if isinstance(e, ast.Constant))
    if isinstance(node, ast.Name):
        if node.id in lists:
            return tuple(lists[node.id])
        if node.id in local:
            return tuple(local[node.id])
    text = ast.unparse(node)
    if "ReasoningParser.DetectorMap" in text:
        return tuple(_dict_keys(srt / "parser" / "reasoning_parser.py", "DetectorMap"))
    if "ToolCallParserEnum" in text:
        return tuple(_dict_keys(srt / "function_call" / "function_call_parser.py", "ToolCallParserEnum"))
    return None


def read_kt_methods(kt_kernel: Path) -> frozenset[str]:
    """kt-kernel's INFERENCE_METHODS frozenset literal in kt_kernel/experts.py."""
    for node in ast.walk(ast.parse((kt_kernel / "experts.py").read_text())):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "INFERENCE_METHODS"
                                                for t in node.targets):
            call = node.value
            assert isinstance(call, ast.Call) and isinstance(call.args[0], ast.List | ast.Set)
            return frozenset(e.value for e in call.args[0].elts if isinstance(e, ast.Constant))
    raise LookupError("INFERENCE_METHODS not found")
