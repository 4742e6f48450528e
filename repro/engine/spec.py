"""Experiment files: the schema, the loader and its validation.

An experiment is one TOML file in ``experiments/`` describing one paper result: what it
reproduces, the study module that runs its trials, the parameter grid, seeds per profile, the
metrics with tolerances and the paper's reference values with provenance. The files hold no
logic; this module is the only place that reads them, and every error names the file and key.

A family of files shares a base through ``extends`` (:func:`merge_raw`: tables merge by key, arrays and scalars
replace unless written under ``[append]``, ``[[metrics]]``/``[[claims]]`` merge by name; ``id``, ``aliases``,
``[[references]]`` and ``[fidelity]`` are never inherited). ``{name}`` in ``notes`` is filled from the typed
params (:func:`render_notes`); ``[[claims]]`` are checked here and judged by :mod:`repro.engine.claims`.

TOML was chosen over data-only Python modules because a TOML file cannot execute code, so "no
logic in experiment files" holds by construction, and because it is read with the standard
library (``tomllib``).
"""

from __future__ import annotations

import ast
import itertools
import logging
import math
import os
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from repro.engine.claims import FUNCTIONS, Claim, ClaimError, check_expression
from repro.engine.identity import BUILTIN_SCOPES, USER_KEY, StreamScope, canonical_json, setting_label
from repro.engine.references import FULL, SEEDS, VARIANT, Reference, ReferenceDefaults
from repro.errors import (
    ExperimentFileError,
    InvalidParameterError,
    ReproError,
    UnknownExperimentError,
    UnknownVariantError,
    suggest,
)

__all__ = [
    "PROFILES",
    "REQUIRED_PROFILES",
    "Claim",
    "ExperimentSpec",
    "Metric",
    "Profile",
    "Reference",
    "TypedOverrides",
    "experiments_dir",
    "format_setting",
    "load_experiment",
    "load_all",
    "get_experiment",
    "check_study",
    "study_of",
    "extends_chain",
    "merge_raw",
    "merged_raw",
    "render_notes",
    "skipped_files",
    "validate_param",
]

log = logging.getLogger(__name__)

PROFILES = ("smoke", "cpu", "full")
#: every experiment declares these; ``cpu`` (a reduced run for experiments whose ``full`` needs an
#: accelerator) is optional
REQUIRED_PROFILES = ("smoke", "full")
KINDS = ("table", "figure", "theorem-check", "calculator", "simulation")

_TOP_KEYS = {
    "id": str, "title": str, "document": str, "section": str, "spec": str, "reproduces": str,
    "kind": str, "trial": str, "datasets": list, "variants": list, "variant_help": dict,
    "base_seed": int, "notes": str, "params": dict, "grid": dict, "cells": list, "profiles": dict,
    "metrics": list, "references": list, "aliases": list, "domains": dict, "expected": str,
    "fidelity": dict, "claims": list, "scopes": dict, "reference": dict,
}
#: ``[fidelity]``: the declared status of a result for the fidelity dashboard (repro/engine/fidelity.py)
FIDELITY_STATUSES = ("reproduced", "partial", "not reproduced", "claims only", "surrogate data", "checked",
                     "calculator", "simulation", "diagnostic", "no reference", "audit", "hardware-limited")
FIDELITY_MISSES = ("erratum", "data not public", "hardware", "method", "paper ambiguous")
_FIDELITY_KEYS = {"status": str, "detail": str, "miss": str, "reason": str}
_REQUIRED = ("id", "title", "document", "section", "spec", "reproduces", "kind", "trial", "profiles",
             "metrics")
_PROFILE_KEYS = {"seeds": int, "est_seconds": (int, float), "params": dict, "grid": dict, "cells": list}
_METRIC_KEYS = {"name": str, "description": str, "tolerance": (int, float), "unit": str}
_CLAIM_KEYS = {"name": str, "expr": str, "threshold": (int, float, list), "source": str, "description": str,
               "values": list}
_REF_KEYS = {"metric": str, "value": (int, float), "source": str, "method": str, "setting": dict,
             "tolerance": (int, float), "conditions": dict}
#: ``[reference]``: what every ``[[references]]`` entry of the file shares (repro/engine/references.py)
_REF_DEFAULT_KEYS = {"source": str, "profiles": list, "conditions": dict, "inert": dict}


def experiments_dir() -> Path:
    """Folder of experiment files: ``$REPRO_EXPERIMENTS_DIR``, else ``experiments/`` of the checkout.

    Raises
    ------
    ExperimentFileError
        If the folder does not exist (e.g. a mistyped ``$REPRO_EXPERIMENTS_DIR``).
    """
    env = os.environ.get("REPRO_EXPERIMENTS_DIR")
    directory = Path(env) if env else Path(__file__).resolve().parents[2] / "experiments"
    if not directory.is_dir():
        source = "$REPRO_EXPERIMENTS_DIR" if env else "the checkout's experiments folder"
        raise ExperimentFileError(f"{directory}: no such folder ({source}); set REPRO_EXPERIMENTS_DIR to the "
                                  "folder holding the experiment *.toml files, or unset it")
    return directory


@dataclass(frozen=True)
class Profile:
    """Seeds and overrides of one profile (``smoke`` for CI, ``full`` as in the paper, optional ``cpu``:
    a clearly labelled reduced run where ``full`` needs an accelerator)."""

    name: str
    seeds: int
    est_seconds: float | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    grid: Mapping[str, list[Any]] | None = None
    cells: list[Mapping[str, Any]] | None = None


@dataclass(frozen=True)
class Metric:
    """A reported quantity; ``tolerance`` is the default allowed |ours − paper|."""

    name: str
    description: str
    tolerance: float | None = None
    unit: str = ""


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=1e-15)
    return str(a) == str(b)


@dataclass(frozen=True)
class ExperimentSpec:
    """One paper result, as declared by its experiment file."""

    id: str
    title: str
    document: str
    section: str
    spec: str
    reproduces: str
    kind: str
    trial: str
    profiles: Mapping[str, Profile]
    metrics: tuple[Metric, ...]
    datasets: tuple[str, ...] = ()
    variants: tuple[str, ...] = ("paper",)
    variant_help: Mapping[str, str] = field(default_factory=dict)
    base_seed: int = 0
    notes: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)
    grid: Mapping[str, list[Any]] | None = None
    cells: tuple[Mapping[str, Any], ...] | None = None
    references: tuple[Reference, ...] = ()
    #: ``[reference]``: the default source, judged profiles, conditions and inert keys of the paper's values
    reference_defaults: ReferenceDefaults = field(default_factory=ReferenceDefaults)
    aliases: tuple[str, ...] = ()
    path: Path | None = None
    domains: Mapping[str, Any] = field(default_factory=dict)
    expected: str = ""
    fidelity: Mapping[str, str] = field(default_factory=dict)
    claims: tuple[Claim, ...] = ()
    #: ``[scopes]``: the named random-stream scopes its trials may use (:class:`StreamScope`)
    scopes: Mapping[str, StreamScope] = field(default_factory=dict)

    @property
    def default_variant(self) -> str:
        return self.variants[0]

    @property
    def metric_names(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.metrics)

    def metric(self, name: str) -> Metric:
        for m in self.metrics:
            if m.name == name:
                return m
        raise KeyError(name)

    def claim(self, name: str) -> Claim:
        """The ``[[claims]]`` entry ``name`` (KeyError naming the declared ones)."""
        for c in self.claims:
            if c.name == name:
                return c
        raise KeyError(f"{self.id}: no claim {name!r}; declared: {', '.join(c.name for c in self.claims)}")

    def rendered_notes(self) -> str:
        """The notes with their ``{placeholders}`` filled from the typed params (:func:`render_notes`)."""
        return render_notes(self.notes, self.placeholder_values())

    def placeholder_values(self) -> dict[str, Any]:
        """What a ``{name}`` in the notes may name: a key of ``[params]`` (its typed value) or a ``[grid]`` axis
        (its list of typed values); profiles' overrides are not used (the notes describe the experiment)."""
        values: dict[str, Any] = dict(self.coerce_params(self.params))
        for key, axis in (self.grid or {}).items():
            values.setdefault(key, [self.coerce_params({key: v})[key] for v in axis])
        return values

    def profile(self, name: str) -> Profile:
        if name not in self.profiles:
            raise InvalidParameterError(
                f"experiment {self.id!r} has no profile {name!r}; valid: {', '.join(self.profiles)}"
            )
        return self.profiles[name]

    def check_variant(self, variant: str | None) -> str:
        """Return the variant to use (default if None) or raise listing the valid ones."""
        if variant is None:
            return self.default_variant
        if variant not in self.variants:
            raise UnknownVariantError(
                f"experiment {self.id!r} has no variant {variant!r}; valid: {', '.join(self.variants)} "
                f"(default {self.default_variant!r})"
            )
        return variant

    def expand_cells(self, profile: str, overrides: Mapping[str, list[Any]] | None = None
                     ) -> list[dict[str, Any]]:
        """The grid cells of ``profile``: explicit ``cells``, the product of ``grid`` lists, or, when a
        file gives both, every explicit cell crossed with the grid's product (e.g. a ``data`` axis
        over a table's hand-listed cells).

        ``overrides`` (from ``--set key=v1,v2``) replace the values of grid axes or fixed params, and a key of
        the listed cells in the cells that have it (``lambda`` leaves a table's λ-free rows as they are). A
        replaced cell whose value the file lists only in cells of another shape is dropped, so ``method=X``
        keeps X's own rows (a cell of another method does not become an X cell without X's keys).
        """
        prof = self.profile(profile)
        grid = dict(self.grid or {})
        grid.update(prof.grid or {})
        combos = [dict(zip(grid, combo, strict=True)) for combo in itertools.product(*grid.values())]
        listed = prof.cells if prof.cells is not None else self.cells
        cells: list[dict[str, Any]]
        if listed is not None:
            cells = [{**dict(c), **g} for c in listed for g in combos] if grid else [dict(c) for c in listed]
        else:
            cells = combos
        declared = [self.coerce_params(c) for c in cells]
        for key, values in (overrides or {}).items():
            values = [self.coerce_params({key: v})[key] for v in values]   # typed, if not already
            if any(key in c for c in cells):
                cells = [cell for c in cells
                         for cell in ([{**c, key: v} for v in values] if key in c else [c])
                         if key not in cell or _has_declared_shape(cell, key, declared)]
        # Typed (the file's 1 and 1.0 of a float key are one value), then deduplicated (overrides
        # may collapse explicit cells), keeping order.
        seen: set[str] = set()
        unique = []
        for c in cells:
            c = self.coerce_params(c)
            s = canonical_json(c)
            if s not in seen:
                seen.add(s)
                unique.append(c)
        if overrides and not unique:
            given = " ".join(f"{k}={','.join(_fmt(v) for v in vs)}" for k, vs in overrides.items())
            raise InvalidParameterError(f"--set {given}: no cell of {self.id!r} has these values together; "
                                        f"`repro show {self.id}` lists its cells")
        return unique or [{}]

    def fixed_params(self, profile: str, overrides: Mapping[str, list[Any]] | None = None
                     ) -> dict[str, Any]:
        """Fixed params of ``profile`` (experiment params updated by the profile's).

        ``overrides`` are typed first (:meth:`coerce_overrides`; nothing is redone for typed ones).
        """
        if overrides:
            overrides = self.coerce_overrides(overrides)
        params = dict(self.params)
        params.update(self.profile(profile).params)
        for key, values in (overrides or {}).items():
            domain = self.domains.get(key)
            words = [w for w in domain.get("also", ()) if isinstance(w, str)] if isinstance(domain, dict) else []
            if key in params and len(values) == 1 and isinstance(values[0], str) and values[0] in words:
                params[key] = values[0]   # a named value of a list parameter (lambdas = "released")
            elif key in params and (isinstance(params[key], list) or self.is_list_param(key)):
                params[key] = list(values)  # a list parameter: the values are the list
            elif key in params:
                if len(values) != 1:
                    raise InvalidParameterError(
                        f"{key!r} is a fixed parameter of {self.id!r}; give one value, got {values}"
                    )
                params[key] = values[0]
        return self.coerce_params(params)

    def settable_keys(self, profile: str) -> set[str]:
        keys = set(self.fixed_params(profile))
        for c in self.expand_cells(profile):
            keys.update(c)
        return keys

    def declared_values(self, key: str) -> list[Any]:
        """Every value ``key`` takes anywhere in the file (params, grid, cells, every profile)."""
        values: list[Any] = []
        tables: list[Mapping[str, Any]] = [self.params, *(p.params for p in self.profiles.values())]
        for table in tables:
            if key in table:  # a list parameter declares its elements
                values.extend(table[key] if isinstance(table[key], list) else [table[key]])
        grids = [self.grid or {}, *((p.grid or {}) for p in self.profiles.values())]
        for grid in grids:
            values.extend(grid.get(key, []))
        cell_lists = [self.cells or (), *((p.cells or ()) for p in self.profiles.values())]
        for cells in cell_lists:
            values.extend(c[key] for c in cells if key in c)
        return values

    def param_type(self, key: str) -> str:
        """The declared type of ``key``: ``int``, ``float``, ``bool``, ``str`` or ``any`` (kept as given: a value
        the file gives in no one kind, such as a list of pairs).

        From the ``[domains]`` entry when there is one (a table: ``float``, or ``int`` with
        ``integer = true``, ``rational``: exact text such as ``1/10`` with ``rational = true``; ``values_of`` and
        ``"path"``: ``str``; an array: the kind of its values), else from the values the
        file declares for the key (all integers: ``int``; numbers with a float among them: ``float``).
        """
        domain = self.domains.get(key)
        if domain == "path":
            return "str"
        if isinstance(domain, dict) and "values_of" in domain:
            return "str"
        if isinstance(domain, dict):
            return "rational" if domain.get("rational") else "int" if domain.get("integer") else "float"
        declared = domain if isinstance(domain, list) else self.declared_values(key)
        kinds = {_kind(d) for d in declared}
        if len(kinds) == 1 and kinds <= {"bool", "str", "int", "float"}:
            return next(iter(kinds))
        if kinds == {"int", "float"}:
            return "float"
        return "any"

    def coerce(self, key: str, value: Any, *, where: str = "--set") -> Any:
        """``value`` (a ``--set`` string or a file value) as the declared type of ``key``, checked
        against its domain (:meth:`param_type`, :func:`_domain_problem`) and :func:`validate_param`.

        Raises
        ------
        InvalidParameterError
            One line naming the key, the value and the fix.
        """
        kind = self.param_type(key)
        shown = (value if value.isprintable() else repr(value)) if isinstance(value, str) else _fmt(value)
        if isinstance(value, str) and self.is_list_param(key):   # `--set lambdas=[0,10]` spells the list too
            value = value.strip().removeprefix("[").removesuffix("]")
        try:
            typed = self._typed(key, kind, value)
        except ValueError as exc:
            article = "an" if kind[0] in "aeiou" else "a"
            words = [w for w in self.domains[key].get("also", ()) if isinstance(w, str)] \
                if isinstance(self.domains.get(key), dict) else None
            also = f" or one of {', '.join(_fmt(w) for w in words)}" if words else ""
            raise InvalidParameterError(f"{where} {key}={shown}: {exc} for {self.id!r}; give {article} {kind} value"
                                        f"{also} (`repro show {self.id}` lists the settable keys)") from None
        problem = self.domain_problem(key, typed)
        if problem:
            raise InvalidParameterError(f"{where} {key}={shown}: {problem} for {self.id!r}")
        validate_param(key, typed, where=where)
        return typed

    def _typed(self, key: str, kind: str, value: Any) -> Any:
        """``value`` as ``kind``, or as itself when it is one of the domain's named words (``also``)."""
        domain = self.domains.get(key)
        words = [w for w in domain.get("also", ()) if isinstance(w, str)] if isinstance(domain, dict) else []
        if isinstance(value, str) and value.strip() in words:
            return value.strip()
        return _coerce(kind, value)

    def domain_problem(self, key: str, value: Any) -> str:
        """Why the typed ``value`` is outside ``key``'s domain (declared, else inferred from the file), or ''."""
        domain = self.domains.get(key)
        if isinstance(domain, dict) and any(_kind(w) == _kind(value) and _same(value, w) or
                                            {_kind(w), _kind(value)} <= {"int", "float"} and _same(value, w)
                                            for w in domain.get("also", ())):
            return ""   # a value allowed besides the range (lambdas = "released", subsample = 0)
        if isinstance(domain, dict) and "values_of" in domain:
            allowed = list(dict.fromkeys(str(v) for v in self.declared_values(domain["values_of"])))
            if str(value) not in allowed:
                return f"not an allowed value (allowed: {', '.join(allowed)}: the {domain['values_of']}s of this result)"
            return ""
        if domain == "path":
            return "" if isinstance(value, str) else f"expected a path, got {value!r}"
        return _domain_problem(domain, self.declared_values(key), value)

    def is_list_param(self, key: str) -> bool:
        """True when the file gives ``key`` a list as a fixed parameter (in ``[params]`` or a profile's): its
        ``--set`` values are the list's elements."""
        tables: list[Mapping[str, Any]] = [self.params, *(p.params for p in self.profiles.values())]
        return any(isinstance(t.get(key), list) for t in tables)

    def coerce_params(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """The file's values (or already typed ones) as their declared types; lists element-wise."""
        out = {}
        for key, value in params.items():
            kind = self.param_type(key)
            try:
                out[key] = ([self._typed(key, kind, v) for v in value] if isinstance(value, list)
                            else self._typed(key, kind, value))
            except ValueError as exc:
                raise ExperimentFileError(f"{self.path or self.id}: key {key}: {exc}") from None
        return out

    def coerce_overrides(self, overrides: Mapping[str, Sequence[Any]]) -> dict[str, list[Any]]:
        """``--set`` values typed and checked before anything is planned or loaded (issue #20, item 1).

        Every spelling of a value (``1``, ``1.0``, ``1e0`` of a float key) becomes the same typed
        value, so it names the same trials, seeds, cache entries and paper values. A value given
        twice in one ``--set`` (after typing: ``epsilon=1,1.0``) is an error.
        """
        if isinstance(overrides, TypedOverrides) and overrides.owner == self.id:
            return overrides   # typed once per command (the plan passes them down)
        out = TypedOverrides(owner=self.id)
        for key, values in overrides.items():
            typed: list[Any] = []
            for value in values:
                v = self.coerce(key, value)
                if any(canonical_json(v) == canonical_json(t) for t in typed):
                    raise InvalidParameterError(
                        f"--set {key}: value {_fmt(v)} is given twice; give each value once")
                typed.append(v)
            out[key] = typed
        return out

    def validate_overrides(self, overrides: Mapping[str, Sequence[Any]]) -> None:
        """Check ``--set`` values (:meth:`coerce_overrides`) without keeping the typed values."""
        self.coerce_overrides(overrides)


class TypedOverrides(dict):  # type: ignore[type-arg]
    """``--set`` values typed by :meth:`ExperimentSpec.coerce_overrides` for the experiment ``owner``: passed
    down as they are, they are never typed again."""

    def __init__(self, *args: Any, owner: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.owner = owner

    def without(self, keys: Iterable[str]) -> TypedOverrides:
        """The same typed values less ``keys``."""
        drop = set(keys)
        return TypedOverrides({k: v for k, v in self.items() if k not in drop}, owner=self.owner)


def _coerce(kind: str, value: Any) -> Any:
    """``value`` as ``kind``; raises ValueError with the reason. Numbers must be finite."""
    if kind == "any":
        return value.strip() if isinstance(value, str) else value
    if kind == "str":
        if isinstance(value, (bool, int, float)) and not isinstance(value, str):
            raise ValueError(f"expected text, got the number {value!r}")
        return str(value).strip()
    if kind == "rational":   # exact: every spelling of one number (0.1, 1/10, 2/20) is its lowest terms, "1/10"
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ValueError(f"expected a rational number such as 1/10, got {value!r}")
        try:
            return str(Fraction(str(value).strip()))
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"expected a rational number such as 1/10, got {value!r}") from None
    if kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in {"true", "false"}:
            return value.strip().lower() == "true"
        raise ValueError(f"expected true or false, got {value!r}")
    # numbers
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {value!r}")
    if isinstance(value, str):
        text = value.strip()
        try:
            number: int | float = int(text) if kind == "int" and text.lstrip("+-").isdigit() else float(text)
        except ValueError:
            raise ValueError(f"expected a number, got {value!r}") from None
    elif isinstance(value, (int, float)) or hasattr(value, "item"):
        number = value.item() if hasattr(value, "item") else value
    else:
        raise ValueError(f"expected a number, got {value!r}")
    if isinstance(number, float) and not math.isfinite(number):
        raise ValueError(f"not a finite number ({number}; overflow or inf/nan)")
    if kind == "int":
        if isinstance(number, float):
            if not number.is_integer():
                raise ValueError(f"expected an integer, got {_fmt(number)}")
            number = int(number)
        return int(number)
    return float(number)


def _has_declared_shape(cell: Mapping[str, Any], key: str, declared: Sequence[Mapping[str, Any]]) -> bool:
    """False when the file's cells with ``cell[key]`` all have other keys than ``cell`` (see
    :meth:`ExperimentSpec.expand_cells`); a value the file never lists for ``key`` keeps the cell."""
    shapes = {frozenset(c) for c in declared if key in c and _same(c[key], cell[key])}
    return not shapes or frozenset(cell) in shapes


def _kind(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    if isinstance(v, str):
        return "str"
    return "other"


#: the bound of an integer domain that declares none: array sizes, loop counts and seeds beyond it fail or never end
MAX_COUNT = 2**31 - 1


def _domain_problem(domain: Any, declared: list[Any], value: Any) -> str:
    """Why ``value`` is outside a parameter's domain (explicit, else inferred), or ''."""
    kind = _kind(value)
    if isinstance(domain, list):
        if not any(_kind(d) == kind or {_kind(d), kind} <= {"int", "float"} for d in domain) \
                or not any(_same(value, d) for d in domain):
            return f"not an allowed value (allowed: {', '.join(_fmt(d) for d in domain)})"
        return ""
    if isinstance(domain, dict) and domain.get("rational"):
        number = Fraction(str(value))
        if domain.get("unit_fraction") and number.numerator != 1:
            return "must be 1/k for a positive integer k"
        for bound, fails, text in (("min", number < domain.get("min", number), ">="),
                                   ("max", number > domain.get("max", number), "<="),
                                   ("gt", "gt" in domain and not number > domain["gt"], ">"),
                                   ("lt", "lt" in domain and not number < domain["lt"], "<")):
            if bound in domain and fails:
                return f"must be {text} {Fraction(domain[bound]).limit_denominator(10**6)}"
        return ""
    if isinstance(domain, dict):
        if kind not in {"int", "float"}:
            return f"expected a number, got {value!r}"
        if domain.get("integer") and not float(value).is_integer():
            return "expected an integer"
        if domain.get("integer") and "max" not in domain and "lt" not in domain and abs(value) > MAX_COUNT:
            return f"must be <= {MAX_COUNT:,} (the largest count, size or seed the code takes)"
        if not math.isfinite(value):
            return "must be a finite number"
        if "multiple_of" in domain and int(value) % domain["multiple_of"]:
            return f"must be a multiple of {domain['multiple_of']}"
        if "min" in domain and value < domain["min"]:
            return f"must be >= {_fmt(domain['min'])}"
        if "max" in domain and value > domain["max"]:
            return f"must be <= {_fmt(domain['max'])}"
        if "gt" in domain and not value > domain["gt"]:
            return f"must be > {_fmt(domain['gt'])}"
        if "lt" in domain and not value < domain["lt"]:
            return f"must be < {_fmt(domain['lt'])}"
        return ""
    kinds = {_kind(d) for d in declared}
    if not kinds or "other" in kinds:  # undeclared here (lists, tables): nothing to infer
        return ""
    if kinds == {"str"}:
        if kind != "str" or value not in declared:
            allowed = ", ".join(dict.fromkeys(str(d) for d in declared))
            return f"not an allowed value (allowed: {allowed}; an experiment's [domains] table can widen this)"
        return ""
    if kinds == {"bool"}:
        return "" if kind == "bool" else f"expected true or false, got {value!r}"
    if kinds <= {"int", "float"}:
        if kind not in {"int", "float"}:
            return f"expected a number, got {value!r}"
        if not math.isfinite(value):
            return "must be a finite number"
        if kinds == {"int"} and not float(value).is_integer():
            return f"expected an integer, got {_fmt(value)}"
        return ""
    return ""


def format_setting(params: Mapping[str, Any]) -> str:
    """Readable label of a cell's parameters: ``k=v;k=v`` with sorted keys (``method`` excluded).

    A label only: trials are identified by :class:`repro.engine.identity.TrialKey`, and reports
    select rows by the typed columns, never by parsing this string."""
    return setting_label(params)


def _fmt(v: Any) -> str:
    if isinstance(v, str) and (v == "" or not v.isprintable()):
        return repr(v) if v else '""'   # one line, whatever was typed
    if isinstance(v, float):
        return repr(v) if not v.is_integer() else repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(_fmt(x) for x in v) + "]"
    return str(v)


# --------------------------------------------------------------------------- validation

_EPS_NAMES = ("eps", "epsilon")


def validate_param(key: str, value: Any, *, where: str = "") -> None:
    """Check privacy parameters by name: ``eps*``/``epsilon*`` > 0 and ``delta*`` in (0, 1).

    Raises
    ------
    InvalidParameterError
        With the rule, the value and the fix.
    """
    lowered = key.lower()
    base = lowered.split("_")[0]
    prefix = f"{where}: " if where else ""
    if isinstance(value, (list, tuple)):
        for v in value:
            validate_param(key, v, where=where)
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return
    if base in _EPS_NAMES or lowered in _EPS_NAMES:
        if not value > 0:
            raise InvalidParameterError(
                f"{prefix}{key!r} (a privacy budget epsilon) must be > 0; got {value}. "
                "Pass a positive epsilon, e.g. --set {key}=1.".replace("{key}", key)
            )
    elif base == "delta" or lowered == "delta":
        if not 0 < value < 1:
            raise InvalidParameterError(
                f"{prefix}{key!r} (a privacy parameter delta) must lie in (0, 1); got {value}. "
                f"Pass e.g. --set {key}=1e-5."
            )


def _err(path: Path | str, key: str, msg: str) -> ExperimentFileError:
    return ExperimentFileError(f"{path}: key {key!r}: {msg}")


def _check_keys(path: Path, where: str, table: Mapping[str, Any], schema: Mapping[str, Any],
                required: Iterable[str] = ()) -> None:
    for key in required:
        if key not in table:
            raise _err(path, f"{where}{key}", "is required but missing")
    for key, value in table.items():
        if key not in schema:
            raise _err(path, f"{where}{key}", f"is not part of the schema; valid keys: {', '.join(sorted(schema))}")
        expected = schema[key]
        if isinstance(value, bool) and expected is not bool:
            raise _err(path, f"{where}{key}", f"must be {_tname(expected)}, got a boolean")
        if not isinstance(value, expected):
            raise _err(path, f"{where}{key}", f"must be {_tname(expected)}, got {type(value).__name__}")


def _tname(t: Any) -> str:
    names = {str: "a string", int: "an integer", float: "a number", list: "an array", dict: "a table"}
    if isinstance(t, tuple):
        return "a number"
    return names.get(t, t.__name__)


def _parse_grid(path: Path, where: str, grid: Mapping[str, Any]) -> dict[str, list[Any]]:
    out = {}
    for k, v in grid.items():
        if not isinstance(v, list) or not v:
            raise _err(path, f"{where}{k}", "grid values must be a non-empty array")
        validate_param(k, v, where=f"{path}: key {where}{k!r}")
        out[k] = v
    return out


def _parse_cells(path: Path, where: str, cells: list[Any]) -> tuple[dict[str, Any], ...]:
    """The listed cells; a cell with array values stands for one cell per value (the product of its arrays,
    first key slowest), so ``{ method = "DP-FERMI", lambda = [0.5, 1.0] }`` is two cells in that order."""
    if not cells:
        raise _err(path, where, "must be a non-empty array of tables")
    out = []
    for i, c in enumerate(cells):
        if not isinstance(c, dict):
            raise _err(path, f"{where}[{i}]", "each cell must be a table")
        for k, v in c.items():
            if isinstance(v, list) and not v:
                raise _err(path, f"{where}[{i}].{k}", "an array in a cell lists its values; it must not be empty")
            validate_param(k, v, where=f"{path}: key {where}[{i}].{k}")
        axes = {k: v for k, v in c.items() if isinstance(v, list)}
        for combo in itertools.product(*axes.values()):
            out.append({**c, **dict(zip(axes, combo, strict=True))})
    return tuple(out)


#: sub-folder of the experiments folder holding base files: shared blocks named by ``extends``, not
#: experiments themselves (no ``id``, never listed)
BASE_DIR = "_base"
#: keys a file never inherits through ``extends``: its identity, the paper's values it is judged on and its
#: declared fidelity status
_NOT_INHERITED = ("id", "aliases", "references", "fidelity")
#: packages whose modules may be named by ``trial`` (``repro._testing`` holds the test suite's toy studies)
TRIAL_PACKAGES = ("repro.studies", "repro._testing")


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ExperimentFileError(f"{path}: not valid TOML: {exc}; fix the file or move it out of the "
                                  "experiments folder") from exc
    except UnicodeDecodeError as exc:
        raise ExperimentFileError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason}); save the file as "
                                  "UTF-8 or move it out of the experiments folder") from exc
    except OSError as exc:
        raise ExperimentFileError(f"{path}: cannot read: {exc}") from exc


def _extends_path(path: Path, name: Any) -> Path:
    """The file an ``extends = name`` in ``path`` names: a ``*.toml`` path relative to ``path``'s
    folder, or an experiment id (``<id>.toml`` beside it)."""
    if not isinstance(name, str) or not name:
        raise _err(path, "extends", f"must be a non-empty string (a base file such as \"{BASE_DIR}/x.toml\" "
                   f"or an experiment id); got {name!r}")
    return (path.parent / (name if name.endswith(".toml") else f"{name}.toml")).resolve()


#: the table of a member file whose entries are appended to the inherited values instead of replacing them
APPEND = "append"
#: arrays of tables merged by ``name`` (a member's entry with a base entry's name replaces it in place)
_BY_NAME = ("metrics", "claims")


def merge_raw(base: Mapping[str, Any], child: Mapping[str, Any], *, where: str = "") -> dict[str, Any]:
    """``child`` merged over ``base`` (the rule of ``extends``; ``where`` names the child file in errors).

    - **Tables merge key by key**, recursively, except that a ``[domains]`` entry is replaced whole (a
      parameter's domain is never mixed).
    - **Arrays and scalars replace** the base's, unless the child writes them under ``[append]``: there a
      string is added after the inherited string (notes: the base's paragraphs, then the member's) and an
      array after the inherited array (``[append.grid] method = ["x"]``: the base's methods, then ``x``). The
      ``[append]`` table mirrors the file's keys; what it names must be inherited (with the same kind) and
      must not also be set by the same file.
    - **``[[metrics]]`` and ``[[claims]]``** are inherited and extended: a child entry with a base entry's
      ``name`` replaces it in place, a new name is appended.
    - ``id``, ``aliases`` and ``[[references]]`` are never inherited (a base may not hold them).
    """
    out = {k: v for k, v in base.items() if k not in _NOT_INHERITED}
    for key, value in child.items():
        if key == APPEND:
            continue
        if key in _BY_NAME and isinstance(value, list):   # one file names each entry once (a second would vanish)
            names = [m.get("name") for m in value if isinstance(m, dict) and m.get("name") is not None]
            twice = sorted({n for n in names if names.count(n) > 1})
            if twice:
                raise _err(where or "experiment file", key, f"{key[:-1]} {twice[0]!r} is declared twice; give each "
                           "a unique name (an entry with a base entry's name replaces it)")
        if key in _BY_NAME and isinstance(out.get(key), list) and isinstance(value, list):
            merged = list(out[key])
            names = [m.get("name") if isinstance(m, dict) else None for m in merged]
            for m in value:
                name = m.get("name") if isinstance(m, dict) else None
                if name is not None and name in names:
                    merged[names.index(name)] = m
                else:
                    merged.append(m)
                    names.append(name)
            out[key] = merged
        elif key == "domains" and isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}  # a parameter's domain is replaced whole, never mixed
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_raw(out[key], value, where=where)
        else:
            out[key] = value
    if APPEND in child:
        _append(out, base, child, child[APPEND], where, APPEND)
    return out


def _append(out: dict[str, Any], base: Mapping[str, Any], child: Mapping[str, Any], table: Any, where: str,
            path: str) -> None:
    """Apply ``[append]`` (see :func:`merge_raw`): each entry extends the inherited value at its key."""
    if not isinstance(table, dict) or not table:
        raise _err(where, path, "must be a table mirroring the file's keys (e.g. [append] notes = \"...\" or "
                   "[append.grid] method = [...])")
    for key, value in table.items():
        here = f"{path}.{key}"
        inherited = base.get(key) if isinstance(base, Mapping) else None
        if isinstance(value, dict):
            if not isinstance(inherited, dict):
                raise _err(where, here, "appends to a table the base does not have")
            sub_child = child.get(key, {}) if isinstance(child.get(key), dict) else {}
            _append(out[key], inherited, sub_child, value, where, here)
            continue
        if key in child:
            raise _err(where, here, f"the file both sets {key!r} and appends to it; keep one")
        if isinstance(value, str) and isinstance(inherited, str):
            out[key] = inherited + value
        elif isinstance(value, list) and isinstance(inherited, list) and key not in _BY_NAME:
            out[key] = [*inherited, *value]
        else:
            what = "nothing" if inherited is None else type(inherited).__name__
            raise _err(where, here, f"appends a {type(value).__name__} to {what}; [append] extends an "
                       "inherited string or array (set the key directly to replace it)")


def _resolve(path: Path, chain: tuple[Path, ...]) -> dict[str, Any]:
    """The raw table of ``path`` merged over its ``extends`` chain; ``chain`` holds the files that
    extend it (to name a cycle)."""
    resolved = path.resolve()
    if resolved in chain:
        cycle = " -> ".join(str(p.name) for p in (*chain[chain.index(resolved):], resolved))
        raise _err(chain[0], "extends", f"forms a cycle: {cycle}; remove one of these `extends`")
    raw = _read_toml(path)
    if chain:
        for key in _NOT_INHERITED:
            if key in raw and resolved.parent.name == BASE_DIR:
                raise _err(path, key, "is not allowed in a base file (never inherited); put it in each "
                           "experiment file")
    if "extends" not in raw:
        if APPEND in raw:
            raise _err(path, APPEND, "appends to inherited values, but the file has no `extends`; set the keys "
                       "directly")
        return raw
    name = raw.pop("extends")
    base_path = _extends_path(path, name)
    if not base_path.is_file():
        raise _err(path, "extends", f"names {name!r}, but {base_path} does not exist; give a path relative to "
                   f"{path.parent} (e.g. \"{BASE_DIR}/x.toml\") or an experiment id")
    return merge_raw(_resolve(base_path, (*chain, resolved)), raw, where=str(path))


def extends_chain(path: str | os.PathLike[str]) -> list[Path]:
    """The files ``path`` extends, nearest first (for display; :func:`merged_raw` checks cycles)."""
    chain: list[Path] = []
    current = Path(path)
    while True:
        name = _read_toml(current).get("extends")
        if name is None:
            return chain
        current = _extends_path(current, name)
        if current in chain or len(chain) > 32:
            raise _err(path, "extends", "forms a cycle; remove one of the `extends`")
        chain.append(current)


def merged_raw(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The raw table of experiment file ``path`` after ``extends`` (what ``repro show --toml`` prints)."""
    return _resolve(Path(path), ())


_TRIAL_CHECKED: dict[tuple[str, float], str] = {}
_MODULE_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


def _module_file(name: str) -> Path | None:
    """Source file of module ``name`` under one of :data:`TRIAL_PACKAGES`, found without executing
    anything but ``repro``'s own ``__init__``."""
    import importlib.util

    for package in TRIAL_PACKAGES:
        if not name.startswith(package + "."):
            continue
        spec = importlib.util.find_spec(package)  # imports only ``repro`` (already loaded)
        if spec is None or not spec.submodule_search_locations:
            return None
        rest = name[len(package) + 1:].split(".")
        for location in spec.submodule_search_locations:
            folder = Path(location).joinpath(*rest[:-1])
            for candidate in (folder / f"{rest[-1]}.py", folder / rest[-1] / "__init__.py"):
                if candidate.is_file():
                    return candidate
        return None
    return None


def _check_trial(path: Path, name: str) -> None:
    """``trial`` must name a module under :data:`TRIAL_PACKAGES` whose source declares ``STUDY = ...``
    (:class:`repro.engine.study.Study`); checked by reading the source (nothing is imported, so a file
    cannot make the loader run code). :func:`study_of` checks the declaration itself."""

    valid = " or ".join(f"{p}." for p in TRIAL_PACKAGES)
    if not _MODULE_NAME.fullmatch(name) or not name.startswith(tuple(f"{p}." for p in TRIAL_PACKAGES)):
        raise _err(path, "trial", f"must name a study module under {TRIAL_PACKAGES[0]}. (e.g. "
                   f"\"repro.studies.thesis.part1_tables\"); got {name!r}")
    source = _module_file(name)
    if source is None:
        raise _err(path, "trial", f"module {name!r} does not exist; name a module under {valid} "
                   "(e.g. \"repro.studies.thesis.part1_tables\")")
    stamp = (str(source), source.stat().st_mtime)
    if stamp not in _TRIAL_CHECKED:
        text = source.read_bytes()
        if re.search(rb"^STUDY\s*=", text, re.M):  # the common case, without parsing (start-up time)
            _TRIAL_CHECKED[stamp] = ""
            return
        try:
            tree = ast.parse(text, filename=str(source))
        except (SyntaxError, ValueError) as exc:
            raise _err(path, "trial", f"module {name!r} ({source}) cannot be parsed: {exc}") from exc
        defines = any(isinstance(node, (ast.Assign, ast.AnnAssign)) and any(
            isinstance(t, ast.Name) and t.id == "STUDY" for t in (node.targets if isinstance(node, ast.Assign)
                                                                  else [node.target])) for node in tree.body)
        _TRIAL_CHECKED[stamp] = "" if defines else (
            f"module {name!r} declares no top-level `STUDY = Study(run_trial=..., ...)`; name a study module")
    if _TRIAL_CHECKED[stamp]:
        raise _err(path, "trial", _TRIAL_CHECKED[stamp])


def load_experiment(path: str | os.PathLike[str]) -> ExperimentSpec:
    """Read one experiment file, merge it over the files it ``extends`` (see :func:`merge_raw`) and
    validate the result."""
    path = Path(path)
    raw = _resolve(path, ())
    if "id" not in raw:
        raise _err(path, "id", "is required but missing (a file without an id is a base file: put it in "
                   f"{BASE_DIR}/ and name it with `extends`)")
    _check_keys(path, "", raw, _TOP_KEYS, _REQUIRED)
    if raw["kind"] not in KINDS:
        raise _err(path, "kind", f"must be one of {', '.join(KINDS)}; got {raw['kind']!r}")
    if path.stem != raw["id"]:
        raise _err(path, "id", f"must equal the file name stem {path.stem!r}; got {raw['id']!r}")
    _check_trial(path, raw["trial"])

    metrics = []
    for i, m in enumerate(raw["metrics"]):
        if not isinstance(m, dict):
            raise _err(path, f"metrics[{i}]", "must be a table")
        _check_keys(path, f"metrics[{i}].", m, _METRIC_KEYS, ("name", "description"))
        metrics.append(Metric(m["name"], m["description"], _opt_float(m.get("tolerance")), m.get("unit", "")))
    names = [m.name for m in metrics]
    if len(set(names)) != len(names):
        raise _err(path, "metrics", "metric names must be unique")

    profiles = {}
    for name, p in raw["profiles"].items():
        if name not in PROFILES:
            raise _err(path, f"profiles.{name}", f"unknown profile; valid: {', '.join(PROFILES)}")
        if not isinstance(p, dict):
            raise _err(path, f"profiles.{name}", "must be a table")
        _check_keys(path, f"profiles.{name}.", p, _PROFILE_KEYS, ("seeds",))
        if p["seeds"] < 1:
            raise _err(path, f"profiles.{name}.seeds", f"must be >= 1; got {p['seeds']}")
        for k, v in p.get("params", {}).items():
            validate_param(k, v, where=f"{path}: key profiles.{name}.params.{k}")
        profiles[name] = Profile(
            name=name, seeds=p["seeds"], est_seconds=_opt_float(p.get("est_seconds")),
            params=dict(p.get("params", {})),
            grid=_parse_grid(path, f"profiles.{name}.grid.", p["grid"]) if "grid" in p else None,
            cells=list(_parse_cells(path, f"profiles.{name}.cells", p["cells"])) if "cells" in p else None,
        )
    for name in REQUIRED_PROFILES:
        if name not in profiles:
            raise _err(path, f"profiles.{name}", "is required (every experiment has smoke and full)")

    defaults = raw.get("reference", {})
    refs = _parse_references(path, raw.get("references", []), defaults, names)

    variants = raw.get("variants", ["paper"])
    if not variants or not all(isinstance(v, str) for v in variants):
        raise _err(path, "variants", "must be a non-empty array of strings (the first is the default)")
    for k, v in raw.get("params", {}).items():
        if k in _TOP_KEYS:
            raise _err(path, f"params.{k}", f"{k!r} is a top-level key, but it sits inside [params]: in TOML, "
                       "keys after a [table] header belong to that table; move it above [params]")
        validate_param(k, v, where=f"{path}: key params.{k}")
    spec = ExperimentSpec(
        id=raw["id"], title=raw["title"], document=raw["document"], section=raw["section"],
        spec=raw["spec"], reproduces=raw["reproduces"], kind=raw["kind"], trial=raw["trial"],
        profiles=profiles, metrics=tuple(metrics), datasets=tuple(raw.get("datasets", [])),
        variants=tuple(variants), variant_help=dict(raw.get("variant_help", {})),
        base_seed=raw.get("base_seed", 0), notes=raw.get("notes", ""), params=dict(raw.get("params", {})),
        grid=_parse_grid(path, "grid.", raw["grid"]) if "grid" in raw else None,
        cells=_parse_cells(path, "cells", raw["cells"]) if "cells" in raw else None,
        references=tuple(refs), aliases=_parse_aliases(path, raw.get("aliases", [])), path=path,
        domains=_parse_domains(path, raw.get("domains", {})), expected=raw.get("expected", ""),
        fidelity=_parse_fidelity(path, raw.get("fidelity", {})),
        claims=_parse_claims(path, raw.get("claims", [])),
        scopes=_parse_scopes(path, raw.get("scopes", {})),
    )
    _check_declared_values(spec)
    _check_placeholders(path, spec)
    _check_scope_seeds(spec)
    _check_claim_names(spec)
    return _with_conditions(spec, defaults)


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


def _check_claim_names(spec: ExperimentSpec) -> None:
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


def _typed_conditions(spec: ExperimentSpec, table: Mapping[str, Any], where: str) -> dict[str, tuple[Any, ...]]:
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


def _with_conditions(spec: ExperimentSpec, table: Mapping[str, Any]) -> ExperimentSpec:
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


#: a ``{name}`` in notes (an ASCII identifier); ``{{name}}`` is the literal text ``{name}``, and braces
#: around anything else (``{0, 1}``, ``{−ε}``) are plain text
_PLACEHOLDER = re.compile(r"\{\{([A-Za-z_][A-Za-z0-9_]*)\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")


def render_notes(text: str, values: Mapping[str, Any]) -> str:
    """``text`` with each ``{name}`` replaced by ``values[name]`` written as ``repro show`` writes values
    (``3.0``, ``[0.0, 0.5]``, ``adult``); ``{{name}}`` gives the literal ``{name}``.

    Raises
    ------
    KeyError
        For a placeholder that ``values`` lacks (the loader refuses such a file, :func:`load_experiment`).
    """
    def fill(match: re.Match[str]) -> str:
        if match.group(1) is not None:
            return "{" + match.group(1) + "}"
        return _show_value(values[match.group(2)])
    return _PLACEHOLDER.sub(fill, text)


def _show_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_show_value(v) for v in value) + "]"
    return repr(value) if isinstance(value, float) else str(value)


def _check_placeholders(path: Path, spec: ExperimentSpec) -> None:
    """Every ``{name}`` of the notes names a ``[params]`` key or a ``[grid]`` axis (one line otherwise)."""
    values = spec.placeholder_values()
    for match in _PLACEHOLDER.finditer(spec.notes):
        name = match.group(2)
        if name is not None and name not in values:
            raise _err(path, "notes", f"placeholder {{{name}}} names no [params] key or [grid] axis; known: "
                       f"{', '.join(sorted(values)) or 'none'} (write {{{{{name}}}}} for the literal text)")


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


_SCOPE_KEYS = {"family": str, "seed": str}


def _parse_scopes(path: Path, table: Mapping[str, Any]) -> dict[str, StreamScope]:
    """``[scopes]``: ``name = { family = "...", seed = "<param>" }`` per named random-stream scope (issue 36):
    the trials of every experiment declaring the same ``family`` share its streams, seeded by the base seed
    or by the integer parameter ``seed``."""
    scopes = {}
    for name, entry in table.items():
        if not isinstance(entry, dict):
            raise _err(path, f"scopes.{name}", 'must be a table such as { family = "thesis-part1" }')
        _check_keys(path, f"scopes.{name}.", entry, _SCOPE_KEYS, ("family",))
        if name in BUILTIN_SCOPES:
            raise _err(path, f"scopes.{name}", f"{name!r} is a built-in scope ({', '.join(BUILTIN_SCOPES)}); "
                       "give the declared scope another name")
        if not entry["family"]:
            raise _err(path, f"scopes.{name}.family", "must be a non-empty name")
        scopes[name] = StreamScope(entry["family"], entry.get("seed"))
    return scopes


def _check_scope_seeds(spec: ExperimentSpec) -> None:
    """A scope seeded by a parameter names an integer parameter of every trial."""
    for name, scope in spec.scopes.items():
        if scope.seed is None:
            continue
        for profile in spec.profiles:
            fixed = spec.fixed_params(profile)
            cells = spec.expand_cells(profile)
            values = [fixed[scope.seed]] if scope.seed in fixed else [c.get(scope.seed) for c in cells]
            bad = [v for v in values if not isinstance(v, int) or isinstance(v, bool) or v < 0]
            if bad:
                raise _err(spec.path or spec.id, f"scopes.{name}.seed",
                           f"{scope.seed!r} must name an integer parameter >= 0 of every trial (profile {profile}: "
                           f"{_fmt(bad[0]) if bad[0] is not None else 'missing'})")


def _check_declared_values(spec: ExperimentSpec) -> None:
    """Every value the file gives a key with a ``[domains]`` entry (params, grid, cells, each profile's) lies in
    that domain, so a bad grid value fails when the file loads, not in half of its trials (issue #35)."""
    tables: list[tuple[str, Mapping[str, Any]]] = [("params", spec.params), ("grid", spec.grid or {})]
    tables += [(f"cells[{i}]", c) for i, c in enumerate(spec.cells or ())]
    for name, prof in spec.profiles.items():
        tables += [(f"profiles.{name}.params", prof.params), (f"profiles.{name}.grid", prof.grid or {})]
        tables += [(f"profiles.{name}.cells[{i}]", c) for i, c in enumerate(prof.cells or ())]
    for where, table in tables:
        for key, value in table.items():
            if key not in spec.domains:
                continue
            for v in value if isinstance(value, list) else [value]:
                try:
                    typed = spec._typed(key, spec.param_type(key), v)
                except ValueError as exc:
                    raise _err(spec.path or spec.id, f"{where}.{key}", f"{_fmt(v)}: {exc}") from None
                problem = spec.domain_problem(key, typed)
                if problem:
                    raise _err(spec.path or spec.id, f"{where}.{key}",
                               f"{_fmt(v)} is outside the file's own [domains] entry: {problem}")


def _parse_fidelity(path: Path, table: Mapping[str, Any]) -> dict[str, str]:
    """``[fidelity]``: ``status`` (one of :data:`FIDELITY_STATUSES`), ``detail`` (short words shown beside it),
    ``miss`` (one of :data:`FIDELITY_MISSES`, why a result is not (fully) reproduced) and ``reason`` (text)."""
    if not table:
        return {}
    _check_keys(path, "fidelity.", table, _FIDELITY_KEYS, ("status",))
    if table["status"] not in FIDELITY_STATUSES:
        raise _err(path, "fidelity.status", f"unknown status {table['status']!r}; valid: "
                   + ", ".join(FIDELITY_STATUSES))
    if "miss" in table and table["miss"] not in FIDELITY_MISSES:
        raise _err(path, "fidelity.miss", f"unknown miss {table['miss']!r}; valid: " + ", ".join(FIDELITY_MISSES))
    return {k: str(v) for k, v in table.items()}


#: keys of a numeric domain table: inclusive bounds, strict bounds, integer-valued
_DOMAIN_KEYS = {"min": (int, float), "max": (int, float), "gt": (int, float), "lt": (int, float), "integer": bool,
                "rational": bool, "unit_fraction": bool, "multiple_of": int, "also": list, "values_of": str}


def _parse_domains(path: Path, domains: Mapping[str, Any]) -> dict[str, Any]:
    """``[domains]``: per parameter, an array of allowed values, ``"path"`` (a file or folder, checked by the
    study when it is used), or a table: numeric with ``min``/``max`` (inclusive), ``gt``/``lt`` (strict) and
    ``integer`` (issue #24 item 2; ``multiple_of``: an integer step, such as the CNN's resolution), or ``rational`` (exact text such as ``1/10``; ``unit_fraction``: 1/k only);
    ``also``: words or numbers allowed besides the range (``lambdas``'s ``"released"``, ``subsample``'s 0); ``values_of = "method"``:
    the values the file declares for another key (``only_method`` takes the result's method names).
    There is no "any value" domain (issue #35)."""
    for key, dom in domains.items():
        if isinstance(dom, list):
            if not dom:
                raise _err(path, f"domains.{key}", "must be a non-empty array of allowed values")
        elif isinstance(dom, dict):
            if not dom:
                raise _err(path, f"domains.{key}", "an empty table allows nothing; give min/max/gt/lt/integer")
            _check_keys(path, f"domains.{key}.", dom, _DOMAIN_KEYS)
            if not all(isinstance(w, (str, int, float)) and not isinstance(w, bool) for w in dom.get("also", ())):
                raise _err(path, f"domains.{key}.also", "must be an array of words or numbers allowed besides the "
                           "range (e.g. [\"released\"] or [0])")
            if "multiple_of" in dom and not (dom.get("integer") and dom["multiple_of"] > 0):
                raise _err(path, f"domains.{key}.multiple_of", "needs integer = true and a positive step "
                           "(e.g. { integer = true, min = 8, multiple_of = 8 })")
            lower = [dom[k] for k in ("min", "gt") if k in dom]
            upper = [dom[k] for k in ("max", "lt") if k in dom]
            if "min" in dom and "gt" in dom or "max" in dom and "lt" in dom:
                raise _err(path, f"domains.{key}", "give one lower bound (min or gt) and one upper bound "
                           "(max or lt)")
            if lower and upper and (lower[0] > upper[0] or lower[0] == upper[0] and ("gt" in dom or "lt" in dom)):
                raise _err(path, f"domains.{key}", f"is empty: its bounds exclude every value ({dom})")
        elif dom != "path":
            raise _err(path, f"domains.{key}", 'must be an array of allowed values, a table with '
                       'min/max/gt/lt/integer (and also = [words]), values_of = "KEY", or "path" (a file or folder); '
                       f'there is no "any value" domain; got {dom!r}')
    return dict(domains)


def _parse_aliases(path: Path, aliases: list[Any]) -> tuple[str, ...]:
    if not all(isinstance(a, str) and a for a in aliases):
        raise _err(path, "aliases", "must be an array of non-empty strings (other ids that name this result)")
    return tuple(aliases)


def _opt_float(v: Any) -> float | None:
    return None if v is None else float(v)


#: files skipped by :func:`load_all`, by folder: {path: error}
_SKIPPED: dict[Path, dict[Path, ReproError]] = {}


def load_all(directory: str | os.PathLike[str] | None = None, *, strict: bool = False
             ) -> dict[str, ExperimentSpec]:
    """Load every ``*.toml`` experiment of ``directory`` (default :func:`experiments_dir`), by id.

    Base files (in ``_base/``, named by ``extends``) are not experiments and are not loaded on their own.
    A file that does not load (not UTF-8, not TOML, bad schema, bad value, a ``trial`` that is not a
    study module, an id or alias already taken) is reported
    once per process as a warning and skipped, so the other experiments stay usable
    (:func:`skipped_files` lists them); ``strict=True`` raises its error instead.
    """
    directory = Path(directory) if directory is not None else experiments_dir()
    if not directory.is_dir():
        raise ExperimentFileError(f"{directory}: no such folder of experiment files")
    specs: dict[str, ExperimentSpec] = {}
    names: dict[str, Path] = {}
    skipped: dict[Path, ReproError] = {}
    files = sorted(directory.glob("*.toml"))
    if not files:
        source = "$REPRO_EXPERIMENTS_DIR" if os.environ.get("REPRO_EXPERIMENTS_DIR") else "the experiments folder"
        raise ExperimentFileError(f"{directory} ({source}) holds no experiment files (*.toml); set "
                                  "REPRO_EXPERIMENTS_DIR to the folder holding them, or unset it")
    for path in files:
        try:
            spec = load_experiment(path)
            for name in (spec.id, *spec.aliases):
                if name in names:
                    raise _err(path, "aliases" if name != spec.id else "id",
                               f"{name!r} is already used by {names[name]}")
        except (ExperimentFileError, InvalidParameterError) as exc:
            if strict:
                raise
            if str(exc) not in _WARNED:
                _WARNED.add(str(exc))
                log.warning("skipping experiment file %s: %s", path.name, exc)
            skipped[path] = exc
            continue
        for name in (spec.id, *spec.aliases):
            names[name] = path
        specs[spec.id] = spec
    _SKIPPED[directory] = skipped
    return specs


_WARNED: set[str] = set()


def skipped_files(directory: str | os.PathLike[str] | None = None) -> dict[Path, ReproError]:
    """Experiment files the last :func:`load_all` of ``directory`` skipped, with their errors."""
    directory = Path(directory) if directory is not None else experiments_dir()
    return dict(_SKIPPED.get(directory, {}))


def get_experiment(experiment_id: str, directory: str | os.PathLike[str] | None = None) -> ExperimentSpec:
    """The experiment with this id (or alias), or an error suggesting close matches."""
    specs = load_all(directory)
    if experiment_id in specs:
        return specs[experiment_id]
    for spec in specs.values():
        if experiment_id in spec.aliases:
            return spec
    for path, exc in skipped_files(directory).items():
        if path.stem == experiment_id:  # the experiment exists but its file is broken: say why
            raise exc
    names = [*specs, *(a for s in specs.values() for a in s.aliases)]
    raise UnknownExperimentError(suggest(experiment_id, names, what="experiment id", listed=len(specs)))


def check_study(spec: ExperimentSpec, study: Any) -> None:
    """The study's declaration (:class:`repro.engine.study.Study`) agrees with experiment file ``spec``
    (issue 36): its ``index``/``values`` are not metrics and its ``values`` not grid keys, the file's
    ``method`` and ``dataset`` values are ones it declares (when it declares them), it has the ``[scopes]``
    the study uses, and a ``--with`` method is added only where the study takes one.

    Raises
    ------
    ExperimentFileError
        One line naming the file, the key and the study.
    """
    where = spec.path or spec.id
    clash = sorted((set(study.index) | set(study.values)) & set(spec.metric_names))
    if clash:
        raise _err(where, "metrics", f"{clash} are metrics here, but study {spec.trial} declares them as "
                   "index/values record keys; a key is a metric or an index or a value, once")
    axes = set(spec.grid or {}) | {k for c in spec.cells or () for k in c}
    for prof in spec.profiles.values():
        axes |= set(prof.grid or {}) | {k for c in prof.cells or () for k in c}
    clash = sorted(set(study.values) & axes)
    if clash:
        raise _err(where, "grid", f"{clash} are grid keys here, but study {spec.trial} declares them as value "
                   "columns (never part of a row's identity); declare them as index or drop them from the grid")
    user_cells = [c for c in spec.cells or () if USER_KEY in c]
    if user_cells and not study.user_methods:
        raise InvalidParameterError(f"--with: {spec.id!r} does not take your own method (study {spec.trial} "
                                    "declares user_methods=False); `repro show ID` says which results do")
    user_names = {c.get("method") for c in user_cells}
    for key, declared, what in (("method", study.methods, "methods"), ("dataset", study.datasets, "datasets")):
        if declared is None:
            continue
        unknown = sorted({str(v) for v in spec.declared_values(key) if v not in user_names} - set(declared))
        if unknown:
            raise _err(where, key, f"{unknown} are not {what} of study {spec.trial}; it declares: "
                       f"{', '.join(declared)}")
    _check_claim_filters(spec, study, axes)
    missing = [s for s in study.scopes if s not in spec.scopes]
    if missing:
        raise _err(where, "scopes", f"study {spec.trial} draws from the random-stream scope(s) {missing}, which this "
                   f"file does not declare; add e.g. `[scopes] {missing[0]} = {{ family = \"<name>\" }}` (or "
                   "extend the base that declares it)")


def _check_claim_filters(spec: ExperimentSpec, study: Any, axes: set[str]) -> None:
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


_STUDIES: dict[tuple[str, str], Any] = {}


def study_of(spec: ExperimentSpec) -> Any:
    """The :class:`repro.engine.study.Study` of ``spec``'s trial module, checked against the file
    (:func:`check_study`); the module is imported here, never by :func:`load_experiment`."""
    from repro.engine.study import load_study

    study = load_study(spec.trial)
    token = (spec.id, canonical_json([[dict(c) for c in spec.cells or ()], str(spec.path), sorted(spec.scopes)]))
    if _STUDIES.get(token) is not study:
        check_study(spec, study)
        _STUDIES[token] = study
    return study
