"""Experiment files: the schema, the loader and its validation.

An experiment is one TOML file in ``experiments/`` describing one paper result: what it
reproduces, the study module that runs its trials, the parameter grid, seeds per profile, the
metrics with tolerances and the paper's reference values with provenance. The files hold no
logic; this module is the only place that reads them, and every error names the file and key.

A family of files shares a base through ``extends`` (:mod:`repro.engine.extends`: tables merge by key, arrays
and scalars replace unless written under ``[append]``, ``[[metrics]]``/``[[claims]]`` merge by name; ``id``,
``aliases``, ``[[references]]`` and ``[fidelity]`` are never inherited). ``{name}`` in ``notes`` is filled from
the typed params or computed by the study (:mod:`repro.engine.notes`); ``[[claims]]`` are checked here and
judged by :mod:`repro.engine.claims`.

TOML was chosen over data-only Python modules because a TOML file cannot execute code, so "no
logic in experiment files" holds by construction, and because it is read with the standard
library (``tomllib``).
"""

from __future__ import annotations

import ast
import logging
import os
import re
from pathlib import Path
from typing import Any

from repro.engine.cells import (
    PROFILES,
    REQUIRED_PROFILES,
    ExperimentSpec,
    Metric,
    Profile,
    TypedOverrides,
    format_setting,
)
from repro.engine.claims import Claim
from repro.engine.extends import BASE_DIR, _resolve
from repro.engine.identity import USER_KEY, canonical_json
from repro.engine.notes import _check_placeholders, placeholder_names
from repro.engine.references import (
    Reference,
    _check_claim_filters,
    _check_claim_names,
    _parse_claims,
    _parse_references,
    _with_conditions,
)
from repro.engine.schema import (
    FIDELITY_MISSES,
    FIDELITY_STATUSES,
    _check_declared_values,
    _check_keys,
    _check_scope_seeds,
    _err,
    _opt_float,
    _parse_aliases,
    _parse_cells,
    _parse_domains,
    _parse_fidelity,
    _parse_grid,
    _parse_scopes,
    validate_param,
)
from repro.errors import (
    ExperimentFileError,
    InvalidParameterError,
    ReproError,
    UnknownExperimentError,
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
    "skipped_files",
    "validate_param",
    "FIDELITY_MISSES",
    "FIDELITY_STATUSES",
]

log = logging.getLogger(__name__)

KINDS = ("table", "figure", "theorem-check", "calculator", "simulation")

_TOP_KEYS = {
    "id": str, "title": str, "document": str, "section": str, "spec": str, "reproduces": str,
    "kind": str, "trial": str, "datasets": list, "variants": list, "variant_help": dict,
    "base_seed": int, "notes": str, "params": dict, "grid": dict, "cells": list, "profiles": dict,
    "metrics": list, "references": list, "aliases": list, "domains": dict, "expected": str,
    "fidelity": dict, "claims": list, "scopes": dict, "reference": dict,
    "cost": dict,   # read by repro/engine/cost.py
}
_REQUIRED = ("id", "title", "document", "section", "spec", "reproduces", "kind", "trial", "profiles",
             "metrics")
_PROFILE_KEYS = {"seeds": int, "est_seconds": (int, float), "params": dict, "grid": dict, "cells": list}
_METRIC_KEYS = {"name": str, "description": str, "tolerance": (int, float), "unit": str}


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


# --------------------------------------------------------------------------- validation


#: packages whose modules may be named by ``trial`` (``repro._testing`` holds the test suite's toy studies)
TRIAL_PACKAGES = ("repro.studies", "repro._testing")


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


def _note_number_names(name: str) -> tuple[str, ...]:
    """The names in the top-level ``NOTE_NUMBERS = (...)`` of study module ``name`` (read from its source, not
    imported; :class:`repro.engine.study.NoteNumbers`), or ``()``."""
    source = _module_file(name)
    if source is None:
        return ()
    stamp = (str(source), source.stat().st_mtime)
    if stamp not in _NOTE_NAMES:
        _NOTE_NAMES[stamp] = ()
        for node in ast.parse(source.read_bytes(), filename=str(source)).body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and any(
                    isinstance(t, ast.Name) and t.id == "NOTE_NUMBERS"
                    for t in (node.targets if isinstance(node, ast.Assign) else [node.target])):
                try:
                    _NOTE_NAMES[stamp] = tuple(str(n) for n in ast.literal_eval(node.value))
                except ValueError:
                    pass
    return _NOTE_NAMES[stamp]


_NOTE_NAMES: dict[tuple[str, float], tuple[str, ...]] = {}


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
    _check_placeholders(path, spec, lambda: _note_number_names(spec.trial))
    _check_scope_seeds(spec)
    _check_claim_names(spec)
    return _with_conditions(spec, defaults)


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
    derived = sorted(set(placeholder_names(spec.notes)) - set(spec.placeholder_values())
                     - set(study.note_numbers.names if study.note_numbers else ()))
    if derived:
        raise _err(where, "notes", f"placeholder {{{derived[0]}}} is no number study {spec.trial} computes (its "
                   "Study(note_numbers=NoteNumbers(names=NOTE_NUMBERS, ...)) must name every NOTE_NUMBERS entry)")
    missing = [s for s in study.scopes if s not in spec.scopes]
    if missing:
        raise _err(where, "scopes", f"study {spec.trial} draws from the random-stream scope(s) {missing}, which this "
                   f"file does not declare; add e.g. `[scopes] {missing[0]} = {{ family = \"<name>\" }}` (or "
                   "extend the base that declares it)")


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
