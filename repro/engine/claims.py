"""``[[claims]]`` of an experiment file: a paper's claim as a small expression over summary columns.

A claim is declared data (``name``, ``expr``, ``threshold``, ``source``), so the numbers a result is judged
against live in the experiment file beside the paper's values, and report code only renders the verdicts
(issue #36, "experiment families"). The expression is Python syntax, parsed with :mod:`ast` and evaluated by
walking the tree: nothing is ``eval``-ed, and only these forms are accepted:

- numbers, ``True``/``False``; strings only as filter values (``method="OPT"``);
- names: ``threshold`` (the claim's number, or array of numbers: ``threshold[0]``), a **metric** of the
  result (the summary's ``mean`` column of the rows of that metric, one value per row), a **fixed
  parameter** of the run (typed), or a **value** the report supplies by name;
- a metric called with keyword filters selects rows by the summary's columns:
  ``fair_regret(method="OFUL")``, ``accuracy(method="OPT", epsilon=1.0)`` (numbers compared with a relative
  tolerance of 1e-9); a filter on a numeric column may compare instead, with the suffix ``__ge``, ``__gt``,
  ``__le`` or ``__lt``: ``sp_gap(method="OPT", epsilon__ge=4)`` keeps the rows with ε ≥ 4; the rows of a
  selection are ordered by the summary's parameter columns (e.g. ε), so selections of two methods over one
  grid line up element by element;
- arithmetic ``+ - * / **`` and unary ``-`` (element-wise, a scalar broadcasts), comparisons ``< <= > >= ==
  !=`` (chained, element-wise: a comparison holds when it holds for every element, and ``any(x > y)``
  when it holds for one), ``and``, ``or``, ``not``;
- functions ``abs(x)``, ``min(...)``/``max(...)`` (one argument: over its elements; several: element-wise),
  ``mean(x)``, ``all(x)``, ``any(x)``, ``first(x)``, ``last(x)``, ``decreasing(x)``/``increasing(x)``
  (strictly, in the selection's order); subscripts by an integer constant (``threshold[1]``, ``x[-1]``).

A claim holds when its expression is true. A selection with no rows makes the claim *not evaluable*
(``None``): the run did not compute what it speaks of (e.g. a smoke profile without that method).
Anything else (``__import__``, attributes, lambdas, comprehensions, unknown functions) is refused when the
file loads, with one line naming the claim and the construct.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Claim", "ClaimError", "NotEvaluable", "check_expression", "evaluate", "evaluate_all"]


class ClaimError(ValueError):
    """An expression outside the claim language (one line: the construct and the fix)."""


class NotEvaluable(Exception):
    """A selection of the claim has no rows in these results."""


@dataclass(frozen=True)
class Claim:
    """One ``[[claims]]`` table: ``expr`` judged with ``threshold``; ``source`` is the paper's location."""

    name: str
    expr: str
    source: str
    threshold: float | tuple[float, ...] | None = None
    description: str = ""
    #: names of values the report supplies (``evaluate(values=...)``), declared so the loader knows every name
    values: tuple[str, ...] = ()


#: the summary's leading columns, and the one-run audit's (``repro run --audit`` adds them beside ``eps_label``);
#: the others are the typed parameter columns rows are ordered by
_LEADING = ("result_id", "method", "setting", "metric", "n", "mean", "std", "paper", "diff", "tolerance",
            "within", "comparable", "paper_source", "condition", "audited_epsilon", "audit")

#: the operators of the language, by node type, as numpy's element-wise functions (resolved when a claim is
#: judged, so loading experiment files never imports numpy: `repro list` stays light)
_BINOPS = {ast.Add: "add", ast.Sub: "subtract", ast.Mult: "multiply", ast.Div: "divide", ast.Pow: "power"}
_CMPOPS = {ast.Lt: "less", ast.LtE: "less_equal", ast.Gt: "greater", ast.GtE: "greater_equal", ast.Eq: "equal",
           ast.NotEq: "not_equal"}


#: comparison suffixes of a selection's filters (``epsilon__ge=4``), as numpy's element-wise functions
_FILTER_OPS = {"__ge": "greater_equal", "__gt": "greater", "__le": "less_equal", "__lt": "less"}


def _split_filter(key: str) -> tuple[str, str | None]:
    """``"epsilon__ge"`` → ``("epsilon", "greater_equal")``; a plain column → ``(column, None)`` (equality)."""
    for suffix, op in _FILTER_OPS.items():
        if key.endswith(suffix) and len(key) > len(suffix):
            return key[: -len(suffix)], op
    return key, None


#: the functions of the language (implemented in :func:`_functions`)
FUNCTIONS = ("abs", "min", "max", "mean", "all", "any", "first", "last", "decreasing", "increasing")


def _functions() -> dict[str, Callable[..., Any]]:
    """The functions of :data:`FUNCTIONS` over numpy arrays (a scalar is a one-element array)."""
    import numpy as np

    def nonempty(x: Any) -> Any:
        a = np.atleast_1d(np.asarray(x, dtype=float))
        if a.size == 0:
            raise NotEvaluable("empty selection")
        return a

    def minmax(reduce: Callable[..., Any], elementwise: Callable[..., Any]) -> Callable[..., Any]:
        def f(*args: Any) -> Any:
            if len(args) == 1:
                return reduce(nonempty(args[0]))
            out = args[0]
            for arg in args[1:]:
                out = elementwise(out, arg)
            return out
        return f

    def strictly(sign: int) -> Callable[[Any], bool]:
        return lambda x: bool(np.all(sign * np.diff(np.atleast_1d(np.asarray(x, dtype=float))) > 0))

    return {"abs": np.abs, "min": minmax(np.min, np.minimum), "max": minmax(np.max, np.maximum),
            "mean": lambda x: float(np.mean(nonempty(x))), "all": lambda x: bool(np.all(x)),
            "any": lambda x: bool(np.any(x)), "first": lambda x: float(nonempty(x)[0]),
            "last": lambda x: float(nonempty(x)[-1]), "decreasing": strictly(-1), "increasing": strictly(+1)}


def check_expression(expr: str, names: Sequence[str] = (), *, where: str = "claim") -> ast.Expression:
    """Parse ``expr`` and refuse every construct outside the claim language (see the module docstring).

    ``names``: when given, the names the expression may use besides ``threshold`` and the functions
    (metrics, parameters, supplied values); an unknown name is refused.

    Raises
    ------
    ClaimError
        One line naming ``where``, the construct and what is allowed.
    """
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as exc:
        raise ClaimError(f"{where}: expression {expr!r} is not valid syntax ({exc.msg})") from None
    allowed = (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.UAdd, ast.BinOp,
               ast.Compare, ast.Call, ast.Name, ast.Load, ast.Constant, ast.keyword, ast.Subscript,
               *_BINOPS, *_CMPOPS)
    for node in ast.walk(tree):
        if not isinstance(node, allowed):
            raise ClaimError(f"{where}: {type(node).__name__} is not allowed in a claim expression ({expr!r}); use "
                             "numbers, metric and parameter names, arithmetic, comparisons, and/or/not and "
                             f"{', '.join(FUNCTIONS)}")
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float, str, bool)):
            raise ClaimError(f"{where}: the constant {node.value!r} is not allowed ({expr!r})")
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name):
                raise ClaimError(f"{where}: only named functions and metric selections can be called ({expr!r})")
            if node.func.id in FUNCTIONS and node.keywords:
                raise ClaimError(f"{where}: {node.func.id}() takes no keywords ({expr!r})")
            if node.func.id not in FUNCTIONS and node.args:
                raise ClaimError(f"{where}: a selection {node.func.id}(...) takes keyword filters only, "
                                 f"e.g. {node.func.id}(method=\"OPT\") ({expr!r})")
            for kw in node.keywords:
                if kw.arg is None or not isinstance(kw.value, ast.Constant):
                    raise ClaimError(f"{where}: a filter is column=constant, e.g. method=\"OPT\" ({expr!r})")
                if _split_filter(kw.arg)[1] is not None and (isinstance(kw.value.value, (str, bool))
                                                            or not isinstance(kw.value.value, (int, float))):
                    raise ClaimError(f"{where}: a comparing filter takes a number, e.g. epsilon__ge=4 ({expr!r})")
        if isinstance(node, ast.Subscript) and not (isinstance(node.slice, ast.Constant) and type(node.slice.value)
                                                    is int or isinstance(node.slice, ast.UnaryOp)
                                                    and isinstance(node.slice.op, ast.USub)
                                                    and isinstance(node.slice.operand, ast.Constant)
                                                    and type(node.slice.operand.value) is int):
            raise ClaimError(f"{where}: subscripts take an integer constant, e.g. threshold[0] ({expr!r})")
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and not _is_filter_value(tree, node):
            raise ClaimError(f"{where}: text is allowed only as a filter value, e.g. method=\"OPT\" ({expr!r})")
    if names:
        known = {"threshold", *FUNCTIONS, *names}
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id not in known:
                raise ClaimError(f"{where}: unknown name {node.id!r} in {expr!r}; known: the metrics, parameters "
                                 f"and values {', '.join(sorted(set(names)))}, threshold and {', '.join(FUNCTIONS)}")
    return tree


def _is_filter_value(tree: ast.AST, const: ast.Constant) -> bool:
    return any(isinstance(n, ast.keyword) and n.value is const for n in ast.walk(tree))


@dataclass
class _Selection:
    """Rows of the summary of one metric; its value is their ``mean`` column in parameter order."""

    frame: Any  # pandas.DataFrame

    def filtered(self, filters: Mapping[str, Any]) -> _Selection:
        import numpy as np

        frame = self.frame
        for name, want in filters.items():
            key, op = _split_filter(name)
            if key not in frame.columns:
                raise NotEvaluable(f"no column {key!r}")
            col = frame[key]
            if op is not None:
                values = np.asarray(col, dtype=float)
                with np.errstate(invalid="ignore"):
                    mask = getattr(np, op)(values, float(want))   # a missing value (NaN) never passes
            elif isinstance(want, (int, float)) and not isinstance(want, bool):
                values = np.asarray(col, dtype=float)
                mask = np.isclose(values, float(want), rtol=1e-9, atol=1e-12)
            else:
                mask = np.asarray(col.astype(str) == str(want))
            frame = frame[mask]
        return _Selection(frame)

    def values(self) -> Any:
        import numpy as np

        if self.frame.empty:
            raise NotEvaluable("empty selection")
        return np.asarray(self.frame["mean"], dtype=float)


@dataclass
class _Scope:
    threshold: Any
    summary: Any = None
    params: Mapping[str, Any] = field(default_factory=dict)
    values: Mapping[str, Any] = field(default_factory=dict)

    def name(self, name: str) -> Any:
        import numpy as np

        if name == "threshold":
            if self.threshold is None:
                raise ClaimError("the claim uses `threshold` but declares none")
            return np.asarray(self.threshold, dtype=float) if isinstance(self.threshold, (list, tuple)) \
                else float(self.threshold)
        if name in self.values:
            return self.values[name]
        if self.summary is not None and name in set(self.summary["metric"]):
            return _Selection(_ordered(self.summary[self.summary["metric"] == name]))
        if name in self.params:
            return self.params[name]
        raise NotEvaluable(f"no metric, parameter or value {name!r} in these results")


def _ordered(frame: Any) -> Any:
    keys = [c for c in frame.columns if c not in _LEADING]
    if not keys:
        return frame
    return frame.sort_values(keys, kind="stable", na_position="first")


def _value(x: Any) -> Any:
    return x.values() if isinstance(x, _Selection) else x


def _truth(x: Any) -> bool:
    import numpy as np

    return bool(np.all(_value(x)))


def _eval(node: ast.AST, scope: _Scope) -> Any:
    import numpy as np

    if isinstance(node, ast.Expression):
        return _eval(node.body, scope)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return scope.name(node.id)
    if isinstance(node, ast.BoolOp):
        if isinstance(node.op, ast.And):
            return all(_truth(_eval(v, scope)) for v in node.values)
        return any(_truth(_eval(v, scope)) for v in node.values)
    if isinstance(node, ast.UnaryOp):
        operand = _eval(node.operand, scope)
        if isinstance(node.op, ast.Not):
            return not _truth(operand)
        return np.negative(_value(operand)) if isinstance(node.op, ast.USub) else _value(operand)
    if isinstance(node, ast.BinOp):
        binop = getattr(np, _BINOPS[type(node.op)])
        return binop(_value(_eval(node.left, scope)), _value(_eval(node.right, scope)))
    if isinstance(node, ast.Compare):
        left = _value(_eval(node.left, scope))
        result: Any = True
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = _value(_eval(comparator, scope))
            result = np.logical_and(result, getattr(np, _CMPOPS[type(op)])(left, right))
            left = right
        return result   # element-wise; `any(...)` looks inside, everything else needs every element
    if isinstance(node, ast.Subscript):
        base = np.atleast_1d(_value(_eval(node.value, scope)))
        index = int(_value(_eval(node.slice, scope)))
        if not -base.size <= index < base.size:
            raise NotEvaluable(f"index {index} outside {base.size} values")
        return float(base[index])
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)
        name = node.func.id
        if name in FUNCTIONS:
            return _functions()[name](*(_value(_eval(a, scope)) for a in node.args))
        target = scope.name(name)
        if not isinstance(target, _Selection):
            raise ClaimError(f"{name} is not a metric; only a metric can be filtered")
        return target.filtered({kw.arg: kw.value.value for kw in node.keywords
                                if isinstance(kw.value, ast.Constant) and kw.arg is not None})
    raise ClaimError(f"{type(node).__name__} is not allowed")  # refused by check_expression before


def evaluate(claim: Claim, summary: Any = None, *, params: Mapping[str, Any] | None = None,
             values: Mapping[str, Any] | None = None) -> bool | None:
    """Whether ``claim`` holds on ``summary`` (a results summary frame), the run's fixed ``params`` and the
    report's named ``values``; ``None`` when a selection it needs has no rows (or a value is not finite)."""
    tree = check_expression(claim.expr, where=f"claim {claim.name!r}")
    scope = _Scope(claim.threshold, summary, params or {}, values or {})
    import numpy as np

    try:
        with np.errstate(all="ignore"):
            result = _value(_eval(tree, scope))
    except NotEvaluable:
        return None
    if isinstance(result, float) and math.isnan(result):
        return None
    return _truth(result)


def evaluate_all(claims: Sequence[Claim], summary: Any = None, *, params: Mapping[str, Any] | None = None,
                 values: Mapping[str, Any] | None = None) -> dict[str, bool | None]:
    """:func:`evaluate` of every claim, by name."""
    return {c.name: evaluate(c, summary, params=params, values=values) for c in claims}
