"""Arithmetic the simulated model can really do: find an expression in a prompt, evaluate it, show the steps.

The expression is parsed with `ast` and walked over a whitelist of operators (never eval). Each binary
operation becomes one step, in evaluation order; a product of two integers shows the distributive split
(17 × 23 = 17 × 20 + 17 × 3) that a step-by-step answer would.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass

Number = int | float

_OPS: dict[type[ast.operator], tuple[str, Callable[[Number, Number], Number]]] = {
    ast.Add: ("+", operator.add), ast.Sub: ("-", operator.sub), ast.Mult: ("×", operator.mul),
    ast.Div: ("/", operator.truediv), ast.FloorDiv: ("//", operator.floordiv), ast.Mod: ("%", operator.mod),
    ast.Pow: ("^", operator.pow),
}
# A run of numbers joined by operators (at least one operator between two numbers).
_EXPRESSION = re.compile(
    r"[(\s]*-?\d+(?:\.\d+)?[)\s]*(?:(?:\*\*|//|[-+*/×x÷^%])[(\s]*-?\d+(?:\.\d+)?[)\s]*)+")
_DATE = re.compile(r"\b\d{4}-\d{1,2}-\d{1,2}\b")  # 2026-11-29 is a date, not a subtraction
_TOKEN = re.compile(r"\d+(?:\.\d+)?|\*\*|//|[-+*/%()]")
_BINARY = ("+", "-", "*", "/", "//", "%", "**")
MAX_EXPONENT = 64


class NotComputable(ValueError):
    """The expression cannot be computed (division by zero, a huge power)."""


@dataclass(frozen=True)
class Step:
    left: Number
    symbol: str
    right: Number
    result: Number

    def text(self) -> str:
        return f"{fmt(self.left)} {self.symbol} {fmt(self.right)} = {fmt(self.result)}"


@dataclass(frozen=True)
class Solution:
    expression: str  # as written for a calculator: 17 * 23
    shown: str  # as shown to a reader: 17 × 23
    steps: tuple[Step, ...]
    value: Number


def fmt(value: Number) -> str:
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.10g}"
    return str(value)


def find_expression(text: str) -> str | None:
    """The first arithmetic expression in `text`, normalized for a calculator (`17 * 23`, `-3 * -4`)."""
    found = find_expressions(text)
    return found[0] if found else None


def find_expressions(text: str) -> list[str]:
    return [_normalize(m.group(0)) for m in _EXPRESSION.finditer(_DATE.sub(" ", text))]


def _normalize(match: str) -> str:
    raw = match.replace("×", "*").replace("x", "*").replace("÷", "/").replace("^", "**")
    parts: list[str] = []
    previous: str | None = None
    for token in _TOKEN.findall(raw):
        if token == "-" and (previous is None or previous in _BINARY or previous == "("):
            parts.append("-")  # unary minus: glued to the number after it
            previous = "unary"
            continue
        parts.append(f" {token} " if token in _BINARY else token)
        previous = token
    expr = "".join(parts).strip()
    if expr.count("(") != expr.count(")"):
        expr = expr.replace("(", "").replace(")", "")
    return expr


def solve(expression: str) -> Solution:
    steps: list[Step] = []

    def walk(node: ast.AST) -> Number:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            value = walk(node.operand)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            left, right = walk(node.left), walk(node.right)
            symbol, function = _OPS[type(node.op)]
            if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
                raise NotComputable(f"the exponent {fmt(right)} is too large to show")
            try:
                result = function(left, right)
            except ZeroDivisionError:
                raise NotComputable("it divides by zero") from None
            steps.append(Step(left, symbol, right, result))
            return result
        raise NotComputable("it is not plain arithmetic")

    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError:
        raise NotComputable("it is not a complete expression") from None
    value = walk(tree.body)
    shown = expression.replace("**", "^").replace("*", "×")
    return Solution(expression, shown, tuple(steps), value)


def worked_steps(solution: Solution) -> list[str]:
    """Lines a careful solver writes, one per operation (products of integers split by place value)."""
    lines: list[str] = []
    for step in solution.steps:
        a, b = step.left, step.right
        if step.symbol == "×" and isinstance(a, int) and isinstance(b, int) and abs(b) >= 10 and b % 10:
            tens, ones = b - b % 10, b % 10
            lines.append(f"{fmt(a)} × {fmt(b)} = {fmt(a)} × {tens} + {fmt(a)} × {ones} = {fmt(a * tens)} + "
                         f"{fmt(a * ones)} = {fmt(step.result)}")
        else:
            lines.append(step.text())
    return lines
