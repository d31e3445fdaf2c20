"""Arithmetic the simulated model can really do: find an expression in a prompt, evaluate it, show the steps.

The expression is parsed with `ast` and walked over a whitelist of operators (never eval). Each binary
operation becomes one step, in evaluation order; a product of two integers shows the distributive split
(17 × 23 = 17 × 20 + 17 × 3) that a step-by-step answer would. Integers stay exact however large (2^100),
within a bound on the digits a power may produce. Numbers that only look like sums (a date, a phone number
such as 555-0100) are not expressions, and neither is anything in a Markdown table (data, not a question).
Spoken forms count: "15% of 240, plus 12" is 15 / 100 * 240 + 12. "Is 17 - 5 greater than 3 * 4?" is a
comparison of two expressions.
"""

from __future__ import annotations

import ast
import math
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
# Written like a subtraction but meant as one token: dates (2026-11-29), phone numbers (555-0100, (555) 010-0100,
# 555-010-0100) and numbers with a leading zero after the hyphen (an id such as 12-034).
_NOT_ARITHMETIC = re.compile(r"\b\d{4}-\d{1,2}-\d{1,2}\b|\(\d{3}\)\s*\d{3}-\d{4}\b|\b\d+(?:-\d+){2,}\b"
                             r"|\b\d{3}-\d{4}\b|\b\d+-0\d+\b")
# A Markdown table's delimiter row (|---|:--:|): the table's lines are data.
_TABLE_RULE = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)+\|?[ \t]*$", re.MULTILINE)
# Arithmetic said in words, as symbols: a percentage of a number, plus, minus, times, divided by.
_SPOKEN: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(\d+(?:\.\d+)?)\s*(?:%|percent)\s+of\s+(?=[(\d])", re.IGNORECASE), r"\1 / 100 * "),
    (re.compile(r",?\s+plus\s+(?=[(\d])", re.IGNORECASE), " + "),
    (re.compile(r",?\s+minus\s+(?=[(\d])", re.IGNORECASE), " - "),
    (re.compile(r"\s+(?:times|multiplied\s+by)\s+(?=[(\d])", re.IGNORECASE), " * "),
    (re.compile(r"\s+divided\s+by\s+(?=[(\d])", re.IGNORECASE), " / "),
)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_TOKEN = re.compile(r"\d+(?:\.\d+)?|\*\*|//|[-+*/%()]")
_BINARY = ("+", "-", "*", "/", "//", "%", "**")
MAX_DIGITS = 1000  # a power whose result would be longer than this is refused (9^9^9 would take minutes)
_RELATIONS: tuple[tuple[str, str], ...] = (  # the words between two expressions → the relation they ask about
    (r"greater than or equal to|at least|>=|≥", ">="), (r"less than or equal to|at most|<=|≤", "<="),
    (r"greater than|more than|larger than|bigger than|higher than|above|>", ">"),
    (r"less than|smaller than|fewer than|lower than|below|<", "<"),
    (r"equal to|the same as|equals?|==?", "=="),
)
_RELATION_WORDS = {">": "greater than", ">=": "at least", "<": "less than", "<=": "at most", "==": "equal to"}


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
    spoken = _blanked(text)
    for pattern, symbols in _SPOKEN:
        spoken = pattern.sub(symbols, spoken)
    return [_normalize(m.group(0)) for m in _EXPRESSION.finditer(spoken)]


def _blanked(text: str) -> str:
    """`text` with what only looks like arithmetic blanked out, at the same length (spans stay valid)."""
    if _TABLE_RULE.search(text):
        text = "\n".join(" " * len(line) if "|" in line else line for line in text.split("\n"))
    return _NOT_ARITHMETIC.sub(lambda m: " " * len(m.group(0)), text)


@dataclass(frozen=True)
class Comparison:
    left: str  # normalized expressions, as find_expressions gives them
    relation: str  # one of > >= < <= ==
    right: str

    @property
    def words(self) -> str:
        return _RELATION_WORDS[self.relation]

    def holds(self, left: Number, right: Number) -> bool:
        return {">": left > right, ">=": left >= right, "<": left < right, "<=": left <= right,
                "==": left == right}[self.relation]


def find_comparison(text: str) -> Comparison | None:
    """Two operands with a relation between them ("is 17 - 5 greater than 3 * 4", "2^10 > 10^3", "7*8 = 56");
    an operand is an expression or a plain number."""
    blanked = _blanked(text)
    expressions = list(_EXPRESSION.finditer(blanked))
    inside = [range(m.start(), m.end()) for m in expressions]
    numbers = [m for m in _NUMBER.finditer(blanked) if not any(m.start() in span for span in inside)]
    operands = sorted([*expressions, *numbers], key=lambda m: m.start())
    for first, second in zip(operands, operands[1:], strict=False):
        between = text[first.end():second.start()].strip().lower()
        for pattern, relation in _RELATIONS:
            if re.fullmatch(rf"(?:is\s+|are\s+)?(?:{pattern})(?:\s+to)?", between):
                return Comparison(_normalize(first.group(0)), relation, _normalize(second.group(0)))
    return None


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
            if isinstance(node.op, ast.Pow):
                _check_power(left, right)
            try:
                result = function(left, right)
            except ZeroDivisionError:
                raise NotComputable("it divides by zero") from None
            except OverflowError:
                raise NotComputable("the result is too large for a floating-point number") from None
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


def _check_power(base: Number, exponent: Number) -> None:
    if base not in (0, 1, -1) and exponent > 0 and exponent * math.log10(abs(base)) > MAX_DIGITS:
        raise NotComputable(f"{fmt(base)}^{fmt(exponent)} has more than {MAX_DIGITS} digits")
    if isinstance(exponent, float) and base < 0 and not exponent.is_integer():
        raise NotComputable("a negative number to a fractional power is not a real number")


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
