"""Config templates ``'{n+1}'`` / ``'{d1*d2,2}'`` (contract §2.6), evaluated without eval()."""

from __future__ import annotations

import ast
import operator
from collections.abc import Mapping
from typing import Any

from .errors import TemplateError, TemplateKeyError

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}


def is_template(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    text = value.strip()
    return len(text) >= 2 and text.startswith("{") and text.endswith("}")


def resolve_templates(obj: Any, params: Mapping[str, Any]) -> Any:
    """Return a copy of ``obj`` with every template string replaced by its value.

    Dicts and lists are walked recursively (so composite sub-configs are resolved too);
    other values are returned unchanged. A template with one comma-separated part gives a
    scalar, several give a list. Unknown names raise ``TemplateKeyError`` (a KeyError);
    anything beyond numeric literals, names, unary +/- and + - * / // % raises
    ``TemplateError``.
    """
    if isinstance(obj, dict):
        return {key: resolve_templates(value, params) for key, value in obj.items()}
    if isinstance(obj, list):
        return [resolve_templates(value, params) for value in obj]
    if not is_template(obj):
        return obj
    inner = obj.strip()[1:-1]
    values = [evaluate_expression(part, params) for part in inner.split(",")]
    return values[0] if len(values) == 1 else values


def evaluate_expression(text: str, params: Mapping[str, Any]) -> Any:
    source = text.strip()
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        raise TemplateError(f"Invalid template expression {source!r}: {exc.msg}") from None
    return _evaluate(tree.body, params, source)


def _evaluate(node: ast.AST, params: Mapping[str, Any], source: str) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value  # bool is an int subclass, so True/False are allowed too
    if isinstance(node, ast.Name):
        if node.id not in params:
            raise TemplateKeyError(f"Template {source!r} uses unknown parameter {node.id!r}")
        return params[node.id]
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _apply(_UNARY[type(node.op)], source, _evaluate(node.operand, params, source))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left = _evaluate(node.left, params, source)
        right = _evaluate(node.right, params, source)
        return _apply(_BINARY[type(node.op)], source, left, right)
    raise TemplateError(f"Template {source!r} uses a forbidden construct ({type(node).__name__})")


def _apply(func: Any, source: str, *args: Any) -> Any:
    try:
        return func(*args)
    except (ArithmeticError, TypeError, ValueError) as exc:
        raise TemplateError(f"Template {source!r} failed: {type(exc).__name__}: {exc}") from None
