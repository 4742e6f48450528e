"""Cross-key rules of an experiment's ``[domains]``: constraints between parameters, checked before any trial.

A key's own domain (``eps_prime = { gt = 0, max = 1000 }``) is checked by :mod:`repro.engine.spec` value by value;
a rule ties several keys together, such as the thesis's budget split ``ε′ > ε₀ + ε₁`` (Part I, Algorithm 2):

.. code-block:: toml

    [domains]
    rules = ["eps_prime > eps0 + eps1"]

A rule is a comparison of arithmetic expressions (numbers, parameter names, ``+ - * / **``, parentheses;
comparisons may chain, ``0 < a < b``). It applies to every trial whose parameters (the fixed ones and its cell's)
include all the names it uses, and it is checked once per cell (a rule does not depend on the repetition).
A broken rule is one line naming the keys given by ``--set`` (else every key of the rule), their values and the rule.
"""

from __future__ import annotations

import ast
import math
import operator
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from repro.errors import ExperimentFileError, InvalidParameterError

__all__ = ["MAX_COUNT", "check_rules", "extremes", "parse_rule", "rule_names", "rules_of"]

#: the bound of an integer domain that declares none: array sizes, loop counts and seeds beyond it fail or never end
MAX_COUNT = 2**31 - 1
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.Pow: operator.pow}
_COMPARE = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge}


def parse_rule(path: Path | str, text: Any) -> ast.Compare:
    """The rule ``text`` as a checked syntax tree; :class:`ExperimentFileError` naming the file otherwise."""
    if not isinstance(text, str):
        raise ExperimentFileError(f"{path}: key domains.rules: each rule is a text such as \"a > b + c\"; "
                                  f"got {text!r}")
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        tree = None
    if not isinstance(tree, ast.Compare) or not all(type(op) in _COMPARE for op in tree.ops) \
            or not all(_allowed(n) for n in ast.walk(tree) if n is not tree):
        raise ExperimentFileError(f"{path}: key domains.rules: {text!r} is not a comparison of sums, differences, "
                                  "products and quotients of numbers and parameter names (e.g. "
                                  "\"eps_prime > eps0 + eps1\")")
    return tree


def _allowed(node: ast.AST) -> bool:
    if isinstance(node, ast.BinOp):
        return type(node.op) in _BINARY
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, (ast.USub, ast.UAdd))
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    return isinstance(node, (ast.Name, ast.Load, *(_BINARY), *(_COMPARE), ast.USub, ast.UAdd))


def rule_names(tree: ast.AST) -> list[str]:
    """The parameter names a rule uses, in order of appearance."""
    return list(dict.fromkeys(n.id for n in ast.walk(tree) if isinstance(n, ast.Name)))


def _value(node: ast.AST, params: Mapping[str, float]) -> float:
    if isinstance(node, ast.Constant):
        return float(node.value)
    if isinstance(node, ast.Name):
        return float(params[node.id])
    if isinstance(node, ast.UnaryOp):
        value = _value(node.operand, params)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp):
        return _BINARY[type(node.op)](_value(node.left, params), _value(node.right, params))
    raise TypeError(f"not an arithmetic node: {ast.dump(node)}")


def rules_of(spec: Any) -> list[tuple[str, ast.Compare]]:
    """The ``[domains]`` rules of ``spec`` as (text, tree)."""
    texts = spec.domains.get("rules", []) if isinstance(spec.domains, Mapping) else []
    return [(text, parse_rule(spec.path or spec.id, text)) for text in texts]


def _numeric(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def broken(tree: ast.Compare, params: Mapping[str, Any]) -> bool | None:
    """Whether ``params`` break the rule; None when the rule does not apply (a name missing or not a number)."""
    names = rule_names(tree)
    if not all(n in params and _numeric(params[n]) for n in names):
        return None
    try:
        values = [_value(tree.left, params), *(_value(c, params) for c in tree.comparators)]
    except (OverflowError, ZeroDivisionError):
        return True   # a rule that cannot be evaluated cannot hold
    return not all(_COMPARE[type(op)](a, b) for op, a, b in zip(tree.ops, values[:-1], values[1:], strict=True))


def check_rules(spec: Any, fixed: Mapping[str, Any], cells: Iterable[Mapping[str, Any]],
                given: Sequence[str] = ()) -> None:
    """Raise :class:`InvalidParameterError` for the first cell (fixed parameters and the cell's) that breaks a
    rule of ``spec``; ``given``: the keys the user set (``--set``), named first."""
    rules = rules_of(spec)
    if not rules:
        return
    seen: set[tuple[Any, ...]] = set()
    for cell in cells:
        params = {**fixed, **cell}
        for text, tree in rules:
            names = rule_names(tree)
            point = tuple(params.get(n) for n in names)
            if (text, point) in seen:
                continue
            seen.add((text, point))
            if broken(tree, params):
                named = [n for n in names if n in given] or names
                values = ", ".join(f"{n}={_shown(params[n])}" for n in names)
                where = "--set " + ", ".join(f"{n}={_shown(params[n])}" for n in named) if set(named) & set(given) \
                    else f"{spec.id}'s own values ({values})"
                raise InvalidParameterError(
                    f"{where}: breaks the rule {text} of {spec.id!r}, declared in its [domains] ({values}); "
                    f"give values that satisfy it (`repro show {spec.id}` lists the rules)")


def _shown(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def _text(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def extremes(spec: Any, key: str) -> list[str]:
    """The domain's extreme values of ``key`` as ``--set`` text (empty for a non-numeric domain)."""
    dom = spec.domains.get(key)
    if not isinstance(dom, dict) or "values_of" in dom or dom.get("rational"):
        return []
    integer = bool(dom.get("integer"))
    out: list[Any] = []
    if "min" in dom:
        out.append(dom["min"])
    if "gt" in dom:
        out.append(dom["gt"] + 1 if integer else math.nextafter(dom["gt"], math.inf))
    if "max" in dom:
        out.append(dom["max"])
    if "lt" in dom:
        out.append(dom["lt"] - 1 if integer else math.nextafter(dom["lt"], -math.inf))
    if "max" not in dom and "lt" not in dom:
        out.append(MAX_COUNT if integer else sys.float_info.max)
    if "min" not in dom and "gt" not in dom:
        out.append(-MAX_COUNT if integer else -sys.float_info.max)
    return list(dict.fromkeys(_text(int(v) if integer else float(v)) for v in out))
