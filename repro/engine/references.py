"""The paper's values of an experiment file and the conditions they hold under.

A ``[[references]]`` entry is a number the paper (or its released code) reports for one metric, at the cells
matching its ``method`` and ``setting``. It describes one configuration: a dataset, a data mode, a variant and
the value of every parameter the paper's run used. A run is judged against it only when the run meets every one
of these **conditions**; otherwise the row keeps the paper's value as context, with the verdict *not comparable*
and the first condition that differs (``dataset: credit-card ≠ adult``, ``epochs: 5 ≠ 200``).

The conditions of a reference are, by default, the experiment's ``full`` profile (the paper's configuration):

- the run's profile is ``full`` (``[reference] profiles`` may add others, e.g. the exact checks whose smoke
  profile computes the same closed forms);
- every fixed parameter has its ``full`` value, and every grid or cell key one of its ``full`` values;
- the variant is the default one; the number of seeds is at least ``full``'s.

A file declares them once, in a ``[reference]`` table (a base file's is inherited by the family)::

    [reference]
    source = "[T] Thesis Table 3.1 (Adult, ε′ = 3)"      # the source of every entry that gives none
    profiles = ["full"]                                 # the profiles whose runs are judged (default)
    conditions = { variant = ["calibrated", "thesis-sigma"] }   # a key's allowed values, where not full's
    [reference.inert]                                   # keys that cannot change what a paper value means
    only_method = "selects which methods run; a row's numbers do not depend on it"

and a ``[[references]]`` entry may add its own ``conditions = { ... }`` (they replace the file's for those keys).
One rule (:func:`mismatch`) decides for the summary, ``repro run``'s printout, ``REPORT.md``, the fidelity
dashboard and the figures.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repro.engine.claims import FUNCTIONS, Claim, ClaimError, check_expression
from repro.engine.schema import _check_keys, _err

__all__ = ["FULL", "SEEDS", "VARIANT", "Reference", "ReferenceDefaults", "RunFacts", "conditions", "mismatch",
           "find_reference", "same_value"]

#: the profile whose values a reference describes unless the file says otherwise
FULL = "full"
#: the condition keys that are not parameters: the run's variant and number of seeds (at least)
VARIANT = "variant"
SEEDS = "seeds"
#: keys whose condition is checked first, in this order (the first that differs is the one shown)
_FIRST = ("dataset", "data", VARIANT)


def same_value(a: Any, b: Any) -> bool:
    """Equal as typed values: numbers to 1e-12 relative, lists element-wise, anything else by its text."""
    a, b = (x.item() if hasattr(x, "item") and not isinstance(x, (list, tuple)) else x for x in (a, b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return False
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) \
            and not isinstance(b, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=1e-15)
    return str(a) == str(b)


@dataclass(frozen=True)
class Reference:
    """A paper value: ``value`` for ``metric`` at cells matching ``method`` and ``setting``, under
    ``conditions`` (its own, beside the file's ``[reference]`` table: :func:`conditions`)."""

    metric: str
    value: float
    source: str
    method: str | None = None
    setting: Mapping[str, Any] = field(default_factory=dict)
    tolerance: float | None = None
    conditions: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)

    def matches(self, method: str, params: Mapping[str, Any]) -> bool:
        """True if this reference applies to a row with ``method`` and setting ``params``."""
        if self.method is not None and self.method != method:
            return False
        return all(k in params and same_value(params[k], v) for k, v in self.setting.items())


@dataclass(frozen=True)
class ReferenceDefaults:
    """The ``[reference]`` table: the default ``source``, the judged ``profiles``, the file's ``conditions``
    (key → allowed values) and the ``inert`` keys (key → why it cannot change a paper value's meaning)."""

    source: str | None = None
    profiles: tuple[str, ...] = (FULL,)
    conditions: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    inert: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RunFacts:
    """What a run was, as the conditions read it: profile, variant, seeds and fixed parameters (typed)."""

    profile: str
    variant: str
    seeds: int
    fixed: Mapping[str, Any] = field(default_factory=dict)


_DEFAULTS: dict[int, tuple[Any, dict[str, tuple[Any, ...]]]] = {}


def default_conditions(spec: Any) -> dict[str, tuple[Any, ...]]:
    """The conditions every reference of ``spec`` holds under unless it says otherwise: the ``full`` profile's
    fixed values and grid/cell values, the default variant, ``full``'s seeds (a minimum), and the file's
    ``[reference] conditions``; less the declared ``inert`` keys. Ordered: dataset, data mode, variant first."""
    cached = _DEFAULTS.get(id(spec))
    if cached is not None and cached[0] is spec:
        return cached[1]
    from repro.engine.identity import USER_KEY

    out: dict[str, tuple[Any, ...]] = {}
    for key, value in spec.fixed_params(FULL).items():
        out[key] = (value,)
    for cell in spec.expand_cells(FULL):
        for key, value in cell.items():
            if key == USER_KEY:
                continue
            values = out.setdefault(key, ())
            if not any(same_value(value, v) for v in values):
                out[key] = (*values, value)
    out[VARIANT] = (spec.default_variant,)
    out[SEEDS] = (spec.profile(FULL).seeds,)
    out.update(spec.reference_defaults.conditions)
    for key in spec.reference_defaults.inert:
        out.pop(key, None)
    ordered = {k: out[k] for k in _FIRST if k in out}
    ordered.update({k: v for k, v in out.items() if k not in ordered})
    _DEFAULTS[id(spec)] = (spec, ordered)
    return ordered


def conditions(spec: Any, ref: Reference) -> dict[str, tuple[Any, ...]]:
    """The conditions of ``ref``: the file's (:func:`default_conditions`) updated by the entry's own."""
    out = dict(default_conditions(spec))
    out.update(ref.conditions)
    return out


def _show(value: Any) -> str:
    if hasattr(value, "item") and not isinstance(value, (list, tuple)):   # a numpy scalar of a summary row
        value = value.item()
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    return str(value)


def mismatch(spec: Any, ref: Reference, run: RunFacts, row: Mapping[str, Any]) -> str | None:
    """The first condition of ``ref`` that the run (``run``, and the row's own values ``row``: its cell and
    index values) does not meet, as ``key: ours ≠ paper's``; None when the run meets them all (comparable).
    The order: dataset, data mode, variant, the profile (``profile: smoke ≠ full``), the other keys, seeds.

    A key the row and the run do not have (a λ of another method's cells) is no condition of that row."""
    profiles = spec.reference_defaults.profiles
    profile_checked = False
    for key, allowed in conditions(spec, ref).items():
        if key not in _FIRST and not profile_checked:   # what ran first (dataset, data mode, variant), then the profile
            profile_checked = True
            if run.profile not in profiles:
                return f"profile: {run.profile} ≠ {' or '.join(profiles)}"
        if key == VARIANT:
            value: Any = run.variant
        elif key == SEEDS:
            if run.seeds < allowed[0]:
                return f"seeds: {run.seeds} < {allowed[0]}"
            continue
        elif key in row:
            value = row[key]
        elif key in run.fixed:
            value = run.fixed[key]
        else:
            continue
        if not any(same_value(value, a) for a in allowed):
            paper = _show(allowed[0]) if len(allowed) == 1 else "one of " + ", ".join(_show(a) for a in allowed)
            return f"{key}: {_show(value)} ≠ {paper}"
    if not profile_checked and run.profile not in profiles:
        return f"profile: {run.profile} ≠ {' or '.join(profiles)}"
    return None


def find_reference(references: Sequence[Reference], method: str, metric: str,
                   params: Mapping[str, Any]) -> Reference | None:
    """The first reference of ``metric`` that applies to a row of ``method`` with ``params``."""
    for ref in references:
        if ref.metric == metric and ref.matches(method, params):
            return ref
    return None


# --------------------------------------------------------------------------- reading them from a file
# (``[reference]``, ``[[references]]`` and ``[[claims]]``; repro/engine/spec.py calls these while it loads a file)

#: the keys of a ``[[claims]]`` entry, of a ``[[references]]`` entry and of the ``[reference]`` table (what every
#: entry of the file shares)
_CLAIM_KEYS = {"name": str, "expr": str, "threshold": (int, float, list), "source": str, "description": str,
               "values": list}
_REF_KEYS = {"metric": str, "value": (int, float), "source": str, "method": str, "setting": dict,
             "tolerance": (int, float), "conditions": dict}
_REF_DEFAULT_KEYS = {"source": str, "profiles": list, "conditions": dict, "inert": dict}


def _parse_references(path: Path, entries: list[Any], defaults: Mapping[str, Any], metrics: Sequence[str]
                      ) -> list[Reference]:
    """``[[references]]`` (their ``conditions`` still raw: :func:`_with_conditions` types them) under the file's
    ``[reference]`` table ``defaults``: each entry's ``source`` defaults to the table's."""
    _check_keys(path, "reference.", defaults, _REF_DEFAULT_KEYS)
    refs = []
    for i, r in enumerate(entries):
        if not isinstance(r, dict):
            raise _err(path, f"references[{i}]", "must be a table")
        _check_keys(path, f"references[{i}].", r, _REF_KEYS, ("metric", "value"))
        if "source" not in r and "source" not in defaults:
            raise _err(path, f"references[{i}].source", "is required (or a [reference] source default)")
        if r["metric"] not in metrics:
            raise _err(path, f"references[{i}].metric", f"{r['metric']!r} is not a declared metric; "
                       f"declared: {', '.join(metrics)}")
        tolerance = r.get("tolerance")
        refs.append(Reference(metric=r["metric"], value=float(r["value"]), source=r.get("source", defaults.get("source")),
                              method=r.get("method"), setting=dict(r.get("setting", {})),
                              tolerance=None if tolerance is None else float(tolerance),
                              conditions=dict(r.get("conditions", {}))))
    return refs


def _check_claim_names(spec: Any) -> None:
    """Every name a claim's expression uses is a metric, a fixed parameter, one of its declared ``values`` (the
    report supplies them), ``threshold`` or a function; every selection ``m(...)`` names a metric; a filter's
    ``method`` is a method the file declares (when it declares any). Otherwise the claim would be 'not
    evaluable' on every run and vanish from the report: refused here, naming the claim and the file."""
    path = spec.path or spec.id
    params = set().union(*(spec.fixed_params(p) for p in spec.profiles))
    methods = {str(v) for v in spec.declared_values("method")}
    for i, claim in enumerate(spec.claims):
        tree = ast.parse(claim.expr.strip(), mode="eval")
        called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and node.func.id not in FUNCTIONS:   # type: ignore[attr-defined]
                if node.func.id not in spec.metric_names:   # type: ignore[attr-defined]
                    raise _err(path, f"claims[{i}].expr", f"claim {claim.name!r} selects {node.func.id}(...), which "  # type: ignore[attr-defined]
                               f"is not a metric of this file; metrics: {', '.join(spec.metric_names)}")
                for kw in node.keywords:
                    if kw.arg == "method" and methods and str(kw.value.value) not in methods:  # type: ignore[attr-defined]
                        raise _err(path, f"claims[{i}].expr", f"claim {claim.name!r} filters method="
                                   f"{kw.value.value!r}, which no cell of this file has; methods: "  # type: ignore[attr-defined]
                                   f"{', '.join(sorted(methods))}")
            elif isinstance(node, ast.Name) and id(node) not in called and node.id not in (
                    "threshold", *FUNCTIONS, *spec.metric_names, *params, *claim.values):
                raise _err(path, f"claims[{i}].expr", f"claim {claim.name!r} names {node.id!r}, which is no metric, "
                           f"fixed parameter or declared value of this file (a value the report supplies is listed "
                           f"in the claim's `values`); metrics: {', '.join(spec.metric_names)}")


def _typed_conditions(spec: Any, table: Mapping[str, Any], where: str) -> dict[str, tuple[Any, ...]]:
    """A ``conditions`` table typed as the keys' values: a value or an array of allowed values (a list parameter's
    one allowed value is its list); ``variant`` names variants, ``seeds`` is the least number of seeds."""
    path = spec.path or spec.id
    known = set().union(*(spec.settable_keys(p) for p in spec.profiles)) | {VARIANT, SEEDS}
    out: dict[str, tuple[Any, ...]] = {}
    for key, value in table.items():
        if key not in known:
            raise _err(path, f"{where}.{key}", f"names no parameter, grid key, {VARIANT} or {SEEDS}; known: "
                       f"{', '.join(sorted(known))}")
        values = [value] if not isinstance(value, list) or spec.is_list_param(key) else value
        if not values:
            raise _err(path, f"{where}.{key}", "must be a value or a non-empty array of allowed values")
        if key == VARIANT:
            unknown = [v for v in values if v not in spec.variants]
            if unknown:
                raise _err(path, f"{where}.{key}", f"{unknown[0]!r} is not a variant; valid: {', '.join(spec.variants)}")
            out[key] = tuple(values)
        elif key == SEEDS:
            if len(values) != 1 or not isinstance(values[0], int) or isinstance(values[0], bool) or values[0] < 1:
                raise _err(path, f"{where}.{key}", "must be one integer >= 1 (the least number of seeds)")
            out[key] = (values[0],)
        else:
            out[key] = tuple(spec.coerce_params({key: v})[key] for v in values)
    return out


def _with_conditions(spec: Any, table: Mapping[str, Any]) -> Any:
    """``spec`` with its ``[reference]`` table (:class:`ReferenceDefaults`) and every entry's ``conditions``
    typed and checked (repro/engine/references.py)."""
    import dataclasses

    path = spec.path or spec.id
    profiles = table.get("profiles", [FULL])
    if not profiles or any(p not in spec.profiles for p in profiles):
        raise _err(path, "reference.profiles", f"must be a non-empty array of this file's profiles "
                   f"({', '.join(spec.profiles)}); got {profiles!r}")
    inert = table.get("inert", {})
    settable = set().union(*(spec.settable_keys(p) for p in spec.profiles))
    for key, why in inert.items():
        if key not in settable:
            raise _err(path, f"reference.inert.{key}", f"names no settable key of this file; settable: "
                       f"{', '.join(sorted(settable))}")
        if not isinstance(why, str) or not why.strip():
            raise _err(path, f"reference.inert.{key}", "must say why the key cannot change what a paper value "
                       "means (a non-empty string)")
    defaults = ReferenceDefaults(source=table.get("source"), profiles=tuple(profiles),
                                 conditions=_typed_conditions(spec, table.get("conditions", {}), "reference.conditions"),
                                 inert=dict(inert))
    refs = tuple(dataclasses.replace(r, conditions=_typed_conditions(spec, r.conditions, f"references[{i}].conditions"))
                 if r.conditions else r for i, r in enumerate(spec.references))
    return dataclasses.replace(spec, reference_defaults=defaults, references=refs)


def _parse_claims(path: Path, claims: list[Any]) -> tuple[Claim, ...]:
    """``[[claims]]``: ``name``, ``expr`` (repro/engine/claims.py), ``source``, optional ``threshold`` (a
    number or an array of numbers) and ``description``; the expression is checked here, nothing is run."""
    out: list[Claim] = []
    for i, c in enumerate(claims):
        if not isinstance(c, dict):
            raise _err(path, f"claims[{i}]", "must be a table")
        _check_keys(path, f"claims[{i}].", c, _CLAIM_KEYS, ("name", "expr", "source"))
        threshold = c.get("threshold")
        if isinstance(threshold, list):
            if not threshold or not all(isinstance(t, (int, float)) and not isinstance(t, bool) for t in threshold):
                raise _err(path, f"claims[{i}].threshold", "must be a number or a non-empty array of numbers")
            threshold = tuple(float(t) for t in threshold)
        elif threshold is not None:
            threshold = float(threshold)
        try:
            tree = check_expression(c["expr"], where=f"claim {c['name']!r}")
        except ClaimError as exc:
            raise _err(path, f"claims[{i}].expr", str(exc)) from None
        if threshold is None and any(getattr(n, "id", None) == "threshold" for n in ast.walk(tree)):
            raise _err(path, f"claims[{i}].threshold", "the expression uses `threshold` but the claim declares none")
        values = c.get("values", [])
        if not all(isinstance(v, str) and v.isidentifier() for v in values):
            raise _err(path, f"claims[{i}].values", "must be an array of the names of values the report supplies")
        out.append(Claim(name=c["name"], expr=c["expr"], source=c["source"], threshold=threshold,
                         description=c.get("description", ""), values=tuple(values)))
    names = [c.name for c in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise _err(path, "claims", f"claim {twice[0]!r} is declared twice; claim names must be unique")
    return tuple(out)


def _check_claim_filters(spec: Any, study: Any, axes: set[str]) -> None:
    """A claim's filters name summary columns (the grid/cell keys, ``method``, ``dataset``, the study's ``index``
    and ``values``) and its ``method`` filters a method of the file or the study (one line naming the claim)."""
    from repro.engine.claims import _split_filter

    where = spec.path or spec.id
    columns = axes | {"method", "dataset"} | set(study.index) | set(study.values)
    methods = {str(v) for v in spec.declared_values("method")} | set(study.methods or ())
    for i, claim in enumerate(spec.claims):
        for node in ast.walk(ast.parse(claim.expr.strip(), mode="eval")):
            if not isinstance(node, ast.Call) or node.func.id in FUNCTIONS:   # type: ignore[attr-defined]
                continue
            for kw in node.keywords:
                key = _split_filter(str(kw.arg))[0]
                if key not in columns:
                    raise _err(where, f"claims[{i}].expr", f"claim {claim.name!r} filters on {key!r}, which is no "
                               f"column of this result's summary; columns: {', '.join(sorted(columns))}")
                if key == "method" and methods and str(kw.value.value) not in methods:  # type: ignore[attr-defined]
                    raise _err(where, f"claims[{i}].expr", f"claim {claim.name!r} filters method="
                               f"{kw.value.value!r}, which is no method of this result; methods: "  # type: ignore[attr-defined]
                               f"{', '.join(sorted(methods))}")
