"""A safe arithmetic evaluator: the expression is parsed with `ast` and walked over a whitelist; never eval."""

from __future__ import annotations

import ast
import math
import operator
import warnings
from collections.abc import Callable

MAX_EXPRESSION_CHARS = 200
MAX_EXPONENT = 1000
MAX_MAGNITUDE = 1e100

Number = int | float

_BINARY: dict[type[ast.operator], Callable[[Number, Number], Number]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Number], Number]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCTIONS: dict[str, Callable[..., Number]] = {
    "sqrt": math.sqrt, "sin": math.sin, "cos": math.cos, "tan": math.tan, "asin": math.asin, "acos": math.acos,
    "atan": math.atan, "exp": math.exp, "log": math.log, "log10": math.log10, "log2": math.log2,
    "abs": abs, "round": round, "floor": math.floor, "ceil": math.ceil,
}
_CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "tau": math.tau}


class CalculatorError(ValueError):
    """The expression is not allowed or cannot be computed; the message says why."""


def evaluate(expression: str) -> Number:
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise CalculatorError(f"expression is too long ({len(expression)} characters; at most {MAX_EXPRESSION_CHARS})")
    try:
        with warnings.catch_warnings():  # e.g. "1if": model text must not spill SyntaxWarnings into our logs
            warnings.simplefilter("ignore", SyntaxWarning)
            tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        raise CalculatorError(f"not a valid arithmetic expression: {expression!r:.80}") from exc
    try:
        return _checked(_evaluate(tree.body))
    except (ArithmeticError, ValueError, TypeError) as exc:
        if isinstance(exc, CalculatorError):
            raise
        raise CalculatorError(f"cannot compute {expression!r:.80}: {exc}") from exc


def _evaluate(node: ast.expr) -> Number:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value  # type: ignore[return-value]  # type() is int or float, checked above
    if isinstance(node, ast.Name):
        if node.id not in _CONSTANTS:
            raise CalculatorError(f"unknown name {node.id!r}; constants: {', '.join(_CONSTANTS)}")
        return _CONSTANTS[node.id]
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow):
            _check_power(left, right)
        return _checked(_BINARY[type(node.op)](left, right))
    if isinstance(node, ast.Call):
        return _call(node)
    raise CalculatorError(f"{_describe(node)} is not allowed; use numbers, + - * / // % **, parentheses, "
                          f"functions ({', '.join(_FUNCTIONS)}) and constants ({', '.join(_CONSTANTS)})")


def _describe(node: ast.expr) -> str:
    if isinstance(node, ast.Constant):
        return f"the value {node.value!r:.40}"
    if isinstance(node, ast.Attribute):
        return f"attribute access (.{node.attr})"
    if isinstance(node, ast.BinOp | ast.UnaryOp):
        return f"the operator {type(node.op).__name__}"
    return {"Subscript": "indexing", "Compare": "comparison", "BoolOp": "and/or", "Lambda": "lambda"}.get(
        type(node).__name__, type(node).__name__
    )


def _call(node: ast.Call) -> Number:
    if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCTIONS:
        raise CalculatorError(f"unknown function; allowed: {', '.join(_FUNCTIONS)}")
    if node.keywords or not 1 <= len(node.args) <= 2:
        raise CalculatorError(f"{node.func.id}() takes one or two plain arguments")
    args = [_evaluate(arg) for arg in node.args]
    if node.func.id == "round" and len(args) == 2 and not isinstance(args[1], int):
        raise CalculatorError("round()'s second argument must be a whole number")
    return _checked(_FUNCTIONS[node.func.id](*args))


def _check_power(base: Number, exponent: Number) -> None:
    """Refuse before computing: 9**9**9 would take minutes and gigabytes."""
    if abs(exponent) > MAX_EXPONENT:
        raise CalculatorError(f"exponent {exponent} is too large (at most {MAX_EXPONENT})")
    if base != 0 and abs(base) != 1 and exponent > 0 and exponent * math.log10(abs(base)) > math.log10(MAX_MAGNITUDE):
        raise CalculatorError(f"result is too large (more than {MAX_MAGNITUDE:g})")


def _checked(value: Number) -> Number:
    if isinstance(value, complex):
        raise CalculatorError("the result is a complex number")
    if isinstance(value, float) and not math.isfinite(value):
        raise CalculatorError("the result is not a finite number")
    if abs(value) > MAX_MAGNITUDE:
        raise CalculatorError(f"result is too large (more than {MAX_MAGNITUDE:g})")
    return value


def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression exactly as written and return the result.

    Args:
        expression: Arithmetic with numbers, + - * / // % ** and parentheses, functions sqrt sin cos tan
            asin acos atan exp log log10 log2 abs round floor ceil, constants pi e tau. Example: "sqrt(2) * 3".
    """
    value = evaluate(expression)
    shown = f"{value:.12g}" if isinstance(value, float) else str(value)
    return f"{expression.strip()} = {shown}"
