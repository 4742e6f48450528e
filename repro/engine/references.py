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

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

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
