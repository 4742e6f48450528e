"""An experiment as the runner sees it: :class:`ExperimentSpec`, its profiles, and the expansion of its cells.

The loader (:mod:`repro.engine.spec`) builds one :class:`ExperimentSpec` per file; this module expands a profile's
grid and listed cells, merges the fixed parameters, and types every value (the file's and ``--set``'s) by its
declared domain (:mod:`repro.engine.schema`). ``{name}`` in ``notes`` is filled from the typed params
(:mod:`repro.engine.notes`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repro.engine.claims import Claim
from repro.engine.identity import StreamScope, canonical_json, setting_label
from repro.engine.notes import placeholder_names, render_notes
from repro.engine.references import Reference, ReferenceDefaults
from repro.engine.schema import _coerce, _domain_problem, _fmt, _kind, _same, validate_param
from repro.errors import ExperimentFileError, InvalidParameterError, UnknownVariantError

__all__ = ["PROFILES", "REQUIRED_PROFILES", "ExperimentSpec", "Metric", "Profile", "TypedOverrides",
           "format_setting"]


PROFILES = ("smoke", "cpu", "full")

#: :meth:`ExperimentSpec.note_numbers` computed in this process, by (study module, full-profile params)
_NOTE_NUMBERS: dict[tuple[str, str], dict[str, Any]] = {}


#: every experiment declares these; ``cpu`` (a reduced run for experiments whose ``full`` needs an
#: accelerator) is optional
REQUIRED_PROFILES = ("smoke", "full")


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
    #: each key's :meth:`param_type`, worked out once (typing 10,000 ``--set`` values stays linear and quick)
    _types: dict[str, str] = field(default_factory=dict, init=False, repr=False, compare=False)

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
        """The notes with their ``{placeholders}`` filled from the typed params and, for a name that is neither a
        param nor a grid axis, from the numbers the study computes (:meth:`note_numbers`; :func:`render_notes`)."""
        values = self.placeholder_values()
        if any(name not in values for name in placeholder_names(self.notes)):
            values = {**self.note_numbers(), **values}
        return render_notes(self.notes, values)

    def note_numbers(self) -> dict[str, Any]:
        """The derived numbers the study computes for the notes (:class:`repro.engine.study.NoteNumbers`) from
        the ``full`` profile's params; computed once per process. Empty when the study declares none."""
        from repro.engine.study import load_study

        numbers = load_study(self.trial).note_numbers
        if numbers is None:
            return {}
        params = self.fixed_params("full")
        key = (self.trial, canonical_json(params))
        if key not in _NOTE_NUMBERS:
            computed = dict(numbers.compute(params))
            missing = sorted(set(numbers.names) - set(computed))
            if missing:
                raise ExperimentFileError(f"{self.trial}: NoteNumbers.compute gave no {', '.join(missing)}; "
                                          "return every name of NOTE_NUMBERS")
            _NOTE_NUMBERS[key] = computed
        return dict(_NOTE_NUMBERS[key])

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
        declared = cells = [self.coerce_params(c) for c in cells]   # typed once: the overrides' values are too
        for key, values in (overrides or {}).items():
            values = [self.coerce_params({key: v})[key] for v in values]   # typed, if not already
            if any(key in c for c in cells):
                shapes = [_declared_shapes(v, key, declared) for v in values]   # once per value: linear
                expanded: list[dict[str, Any]] = []
                for c in cells:
                    if key not in c:
                        expanded.append(c)
                        continue
                    for v, shape in zip(values, shapes, strict=True):
                        cell = {**c, key: v}
                        if not shape or frozenset(cell) in shape:
                            expanded.append(cell)
                cells = expanded
        # Typed (the file's 1 and 1.0 of a float key are one value), then deduplicated (overrides
        # may collapse explicit cells), keeping order.
        seen: set[str] = set()
        unique = []
        for c in cells:
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
        if key not in self._types:
            self._types[key] = self._param_type(key)
        return self._types[key]

    def _param_type(self, key: str) -> str:
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
            seen: set[str] = set()   # linear in the number of values (10,000 --set values: milliseconds)
            for value in values:
                v = self.coerce(key, value)
                text = canonical_json(v)
                if text in seen:
                    raise InvalidParameterError(
                        f"--set {key}: value {_fmt(v)} is given twice; give each value once")
                seen.add(text)
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


def _declared_shapes(value: Any, key: str, declared: Sequence[Mapping[str, Any]]) -> set[frozenset[str]]:
    """The key sets of the file's cells where ``key`` is ``value``: a replaced cell is kept when it has one of
    them, or when the file never lists ``value`` for ``key`` (see :meth:`ExperimentSpec.expand_cells`)."""
    return {frozenset(c) for c in declared if key in c and _same(c[key], value)}


def format_setting(params: Mapping[str, Any]) -> str:
    """Readable label of a cell's parameters: ``k=v;k=v`` with sorted keys (``method`` excluded).

    A label only: trials are identified by :class:`repro.engine.identity.TrialKey`, and reports
    select rows by the typed columns, never by parsing this string."""
    return setting_label(params)
