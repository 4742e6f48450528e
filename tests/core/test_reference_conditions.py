"""No row is judged against a paper value whose configuration the run does not have (repro/engine/references.py).

The property test runs every experiment's plan and summary code (``run_experiment`` with the trials replaced by
records of zeros: nothing is trained) with one settable key changed to another value of its domain, another
variant, fewer seeds or another profile, and checks every judged row against the paper's configuration: the
``full`` profile's values of every key the file does not declare inert (or the values its ``[reference]
conditions`` allow), the default variant, at least ``full``'s seeds.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import pytest

from repro.engine import runner
from repro.engine.identity import USER_KEY
from repro.engine.runner import RunConfig, run_experiment
from repro.engine.spec import ExperimentSpec, load_all
from repro.engine.study import load_study
from repro.engine.trial import TrialOutput
from repro.errors import InvalidParameterError

SPECS = load_all(strict=True)
VARIANT, SEEDS = "variant", "seeds"


def same_value(a: Any, b: Any) -> bool:
    """Equal as typed values (numbers to 1e-12 relative, lists element-wise, else by text)."""
    a, b = (x.item() if hasattr(x, "item") else x for x in (a, b))
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b) and all(
            same_value(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=1e-15)
    return str(a) == str(b)


class _Declared:
    """A file's ``[reference]`` declaration: judged profiles, conditions, inert keys (none declared: full's)."""

    def __init__(self, spec: ExperimentSpec) -> None:
        own = getattr(spec, "reference_defaults", None)
        self.profiles = tuple(own.profiles) if own else ("full",)
        self.conditions = dict(own.conditions) if own else {}
        self.inert = dict(own.inert) if own else {}


def _fake_pending(spec: ExperimentSpec):
    """A stand-in for the workers: each trial returns one record of zeros per row the references speak of (the
    cell's, and one per reference setting of the study's index keys, e.g. a λ of an internal sweep)."""
    index = set(load_study(spec.trial).index)

    def run_pending(pending, config):
        for task in pending:
            method = str(task.cell.get("method", ""))
            extras = [{}]
            for ref in spec.references:
                own = {k: v for k, v in ref.setting.items() if k in index and k not in task.cell}
                if own and own not in extras and (ref.method in (None, method) or "method" not in task.cell):
                    extras.append(own)
            records = [{**{m: 0.0 for m in spec.metric_names}, **extra, **({"method": ref_method}
                       if (ref_method := _method_of(spec, task.cell)) else {})} for extra in extras]
            yield task.index, True, TrialOutput(records=records), 0.0, {}
    return run_pending


def _method_of(spec: ExperimentSpec, cell: dict[str, Any]) -> str | None:
    """The cell's method, or (cells without one) the first method a reference names, so references are matched."""
    if "method" in cell:
        return None
    names = [r.method for r in spec.references if r.method]
    return names[0] if names else None


def _allowed(spec: ExperimentSpec) -> dict[str, list[Any]]:
    """The paper's configuration, computed here from the file: full's fixed values and grid/cell values, except
    where ``[reference] conditions`` says otherwise; inert keys are free."""
    out: dict[str, list[Any]] = {k: [v] for k, v in spec.fixed_params("full").items()}
    for cell in spec.expand_cells("full"):
        for k, v in cell.items():
            if k != USER_KEY:
                out.setdefault(k, []).append(v)
    out.update({k: list(v) for k, v in _Declared(spec).conditions.items() if k not in (VARIANT, SEEDS)})
    for key in _Declared(spec).inert:
        out.pop(key, None)
    return out


def _check(spec: ExperimentSpec, config: RunConfig, monkeypatch: pytest.MonkeyPatch) -> int:
    """Run the plan and summary of ``spec`` under ``config`` (fake trials); assert no judged row departs from
    the paper's configuration; return the number of judged rows."""
    monkeypatch.setattr(runner, "_run_pending", _fake_pending(spec))
    try:
        outcome = run_experiment(spec, config)
    except InvalidParameterError:
        return 0   # refused before anything runs (a study's own check): nothing is judged
    summary = outcome.summary
    mask = summary["within"].notna()
    if "comparable" in summary:
        mask |= summary["comparable"].astype(str).str.lower().eq("true")
    judged = summary[mask]
    fixed = spec.fixed_params(config.profile, outcome.config.overrides)
    variant = config.variant or spec.default_variant
    variants = _Declared(spec).conditions.get(VARIANT, (spec.default_variant,))
    least = _Declared(spec).conditions.get(SEEDS, (spec.profile("full").seeds,))[0]
    allowed = _allowed(spec)
    for row in judged.to_dict("records"):
        where = f"{spec.id} {config.profile} {dict(config.overrides)} variant {variant}, row {row['method']} {row['setting']} {row['metric']}"
        assert config.profile in _Declared(spec).profiles, f"{where}: judged at profile {config.profile}"
        assert variant in variants, f"{where}: judged at variant {variant}"
        assert outcome.n_seeds >= least, f"{where}: judged with {outcome.n_seeds} seeds"
        for key, values in allowed.items():
            value = row[key] if key in row and _present(row[key]) else fixed.get(key)
            if value is None:
                continue
            assert any(same_value(value, v) for v in values), f"{where}: judged with {key} = {value!r} ∉ {values}"
    return len(judged)


def _present(v: Any) -> bool:
    return not (v is None or (isinstance(v, float) and math.isnan(v)))


def _alternatives(spec: ExperimentSpec, key: str, current: Any) -> list[Any]:
    """Other values of ``key``'s domain than ``current``: every other one of a listed domain or a text key (each
    dataset, data mode, method), one changed number (a list parameter: another list)."""
    domain = spec.domains.get(key)
    if isinstance(current, list):
        if len(current) > 1:
            return [current[:1]]
        return [[_bump(current[0])]] if current and isinstance(current[0], (int, float)) else []
    candidates: list[Any] = []
    if isinstance(domain, list):
        candidates = list(domain)
    elif isinstance(domain, dict) and "values_of" in domain:
        candidates = [*spec.declared_values(domain["values_of"]), *domain.get("also", ())]
    elif isinstance(domain, dict) and domain.get("rational"):
        candidates = [str(Fraction(str(current)) / 2), str(Fraction(str(current)) * 2)]
    elif domain == "path":
        candidates = ["elsewhere"]
    elif isinstance(current, bool):
        candidates = [not current]
    elif isinstance(current, (int, float)):
        candidates = [_bump(current), current / 2 if isinstance(current, float) else max(current - 1, 0),
                      *domain.get("also", ())] if isinstance(domain, dict) else [_bump(current)]
    else:
        candidates = spec.declared_values(key)
    every = isinstance(domain, list) or isinstance(current, str)   # each other dataset, data mode, word
    out: list[Any] = []
    for c in candidates:
        try:
            typed = spec.coerce(key, c)
        except InvalidParameterError:
            continue
        if not same_value(typed, current) and not any(same_value(typed, spec.coerce(key, o)) for o in out):
            out.append(c)
            if not every:
                break
    return out


def _bump(v: Any) -> Any:
    return v + 1 if isinstance(v, int) and not isinstance(v, bool) else v * 2 if v else 1.0


def _cases(spec: ExperimentSpec) -> list[tuple[str, dict[str, Any]]]:
    """(label, RunConfig arguments) for every settable key of ``full`` and the run-level choices."""
    cases: list[tuple[str, dict[str, Any]]] = []
    fixed = spec.fixed_params("full")
    cells = spec.expand_cells("full")
    for key in sorted(spec.settable_keys("full")):
        if key == USER_KEY:
            continue
        current = fixed[key] if key in fixed else next(c[key] for c in cells if key in c)
        for alt in _alternatives(spec, key, current):
            values = [",".join(map(str, alt))] if isinstance(alt, list) else [alt]
            cases.append((f"{key}={alt}", {"overrides": {key: [str(v) if not isinstance(v, str) else v
                                                              for v in values]}}))
    for variant in spec.variants[1:]:
        cases.append((f"variant {variant}", {"variant": variant}))
    if spec.profile("full").seeds > 1:
        cases.append(("fewer seeds", {"seeds": spec.profile("full").seeds - 1}))
    for profile in spec.profiles:
        if profile != "full":
            cases.append((f"profile {profile}", {"profile": profile}))
    return cases


def _split_list_override(spec: ExperimentSpec, config: dict[str, Any]) -> dict[str, Any]:
    """``--set lambdas=0,0.5`` gives the list's elements as separate values."""
    overrides = config.get("overrides")
    if overrides:
        config = {**config, "overrides": {k: [p for v in vs for p in str(v).split(",")] if spec.is_list_param(k)
                                          else vs for k, vs in overrides.items()}}
    return config


@pytest.mark.parametrize("experiment_id", sorted(SPECS))
def test_no_row_is_judged_against_a_reference_whose_conditions_the_run_does_not_meet(
        experiment_id: str, monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    spec = SPECS[experiment_id]
    for _label, args in _cases(spec):
        args = _split_list_override(spec, {"profile": "full", **args})
        _check(spec, RunConfig(out=tmp_path, use_cache=False, **args), monkeypatch)


@pytest.mark.parametrize("experiment_id", sorted(i for i, s in SPECS.items() if s.references))
def test_the_full_profile_as_declared_is_comparable_for_every_reference(
        experiment_id: str, monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """The paper's own configuration keeps every verdict it had: each reference that applies to a row of the
    default full run is compared (none becomes 'not comparable')."""
    spec = SPECS[experiment_id]
    monkeypatch.setattr(runner, "_run_pending", _fake_pending(spec))
    summary = run_experiment(spec, RunConfig(out=tmp_path, profile="full", use_cache=False)).summary
    with_paper = summary[summary["paper"].notna()]
    assert not with_paper.empty
    assert with_paper["comparable"].astype(bool).all(), with_paper.loc[~with_paper["comparable"].astype(bool),
                                                                       "condition"].tolist()[:3]


def test_the_declared_inert_keys_are_settable_and_say_why() -> None:
    """An inert key (it cannot change what a paper value means) is a settable key of its file, with a reason;
    changing it keeps the full run comparable (the property test above runs every settable key)."""
    declared = 0
    for spec in SPECS.values():
        settable = set().union(*(spec.settable_keys(p) for p in spec.profiles))
        for key, why in _Declared(spec).inert.items():
            declared += 1
            assert key in settable and len(why.split()) >= 4, (spec.id, key, why)
    assert declared   # the families declare theirs (only_method, plotting keys)


@pytest.mark.parametrize(("experiment_id", "profile", "overrides", "reason"), [
    ("thesis-table-3.1", "smoke", {"dataset": ["credit-card"]}, "dataset: credit-card ≠ adult"),
    ("thesis-table-3.1", "full", {"dataset": ["credit-card"]}, "dataset: credit-card ≠ adult"),
    ("dpfermi-fig-2", "full", {"epochs": ["5"]}, "epochs: 5 ≠ 200"),
    ("dpfermi-fig-2", "smoke", {}, "profile: smoke ≠ full"),
])
def test_the_issue_s_runs_are_not_comparable_with_the_reason(experiment_id: str, profile: str, overrides: dict,
                                                             reason: str, monkeypatch: pytest.MonkeyPatch,
                                                             tmp_path) -> None:
    """`repro run thesis-table-3.1 --set dataset=credit-card` and `repro run dpfermi-fig-2 --set epochs=5 --profile
    full` (their plan and summary, trials faked): every paper value is context, with the condition that differs."""
    spec = SPECS[experiment_id]
    monkeypatch.setattr(runner, "_run_pending", _fake_pending(spec))
    summary = run_experiment(spec, RunConfig(out=tmp_path, profile=profile, overrides=overrides,
                                             use_cache=False)).summary
    with_paper = summary[summary["paper"].notna()]
    assert len(with_paper) > 0 and summary["within"].isna().all()
    assert (with_paper["comparable"] == False).all()   # noqa: E712 - the column's value, not truthiness
    assert set(with_paper["condition"]) == {reason}
    if "dataset" in overrides:
        assert set(summary["dataset"]) == {"credit-card"}
