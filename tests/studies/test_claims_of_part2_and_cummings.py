"""Issue #36: the [[claims]] of thesis Part II (theory checks, Tables 5.1–5.4) and of Cummings et al.'s
Algorithm 1 audit, each judged on a tiny summary on which it holds and one on which it fails; the comparing
filters of a claim's selection (``epsilon__ge=4``).

(The Figure 5.1–5.10 claims are tested in tests/studies/thesis/test_ldp_figures.py, the Theorem 1 audit's in
tests/theory/test_compat_impossibility.py.)
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from repro.engine.claims import Claim, ClaimError, check_expression, evaluate
from repro.engine.spec import experiments_dir, load_experiment


def _rows(*rows: tuple) -> pd.DataFrame:
    """Summary rows (method, metric, mean, {column: value}) as the evaluator reads them."""
    return pd.DataFrame([{"method": m, "metric": k, "mean": v, **extra} for m, k, v, extra in rows])


# --------------------------------------------------------------------------- comparing filters

GAPS = _rows(*[("A", "gap", v, {"epsilon": e}) for e, v in ((1.0, 0.3), (4.0, 0.2), (8.0, 0.1))],
             ("B", "gap", 0.5, {"epsilon": None}))


@pytest.mark.parametrize(("expr", "expected"), [
    ('mean(gap(method="A", epsilon__ge=4)) < 0.16', True),     # mean of 0.2 and 0.1
    ('mean(gap(method="A", epsilon__ge=4)) < 0.15', False),
    ('gap(method="A", epsilon__gt=4) == 0.1', True),
    ('gap(method="A", epsilon__le=4) >= 0.2', True),
    ('first(gap(method="A", epsilon__lt=4)) == 0.3', True),
    ('gap(method="A", epsilon__gt=8) < 1', None),              # no row: not evaluable
    ('gap(epsilon__ge=0) < 1', True),                          # a missing ε (B's row) never passes
])
def test_a_filter_may_compare_a_numeric_column(expr: str, expected: bool | None) -> None:
    assert evaluate(Claim("c", expr, "src"), GAPS) is expected


def test_a_comparing_filter_takes_a_number() -> None:
    with pytest.raises(ClaimError, match="comparing filter takes a number"):
        check_expression('gap(epsilon__ge="4")')


# --------------------------------------------------------------------------- claims of the experiment files


def _claim(experiment: str, name: str) -> Claim:
    return load_experiment(experiments_dir() / f"{experiment}.toml").claim(name)


def _theory(check: str, metric: str, *values: float) -> list[tuple]:
    return [("", metric, v, {"check": check}) for v in values]


#: (experiment, claim): summary rows on which it holds, and rows on which it fails
FIXTURES: dict[tuple[str, str], tuple[list[tuple], list[tuple]]] = {
    ("thesis-ldp-theory", "lemma13"): (_theory("lemma13", "violations", 0), _theory("lemma13", "violations", 1)),
    ("thesis-ldp-theory", "lemma16"): (_theory("lemma16", "violations", 0, 0), _theory("lemma16", "violations", 0, 2)),
    ("thesis-ldp-theory", "theorem14-optimal"): (_theory("theorem14", "grid_minus_opt", 0.0, 1e-13, -1e-13),
                                                 _theory("theorem14", "grid_minus_opt", 0.0, -1e-9)),
    ("thesis-ldp-theory", "theorem14-not-worse-than-rr"): (
        _theory("theorem14", "opt_ratio", 0.2, 0.4) + _theory("theorem14", "rr_ratio", 0.3, 0.4),
        _theory("theorem14", "opt_ratio", 0.2, 0.5) + _theory("theorem14", "rr_ratio", 0.3, 0.4)),
    ("thesis-ldp-theory", "theorem14-exact-ldp"): (_theory("theorem14", "ldp_excess", 1e-12, -1e-12),
                                                   _theory("theorem14", "ldp_excess", 0.0, -1e-6)),
    ("thesis-ldp-theory", "ldp-every-mechanism"): (
        _theory("ldp", "ldp_excess", 1e-12) + _theory("ldp", "constraint_violation", 1e-11),
        _theory("ldp", "ldp_excess", 1e-12) + _theory("ldp", "constraint_violation", 1e-6)),
    ("thesis-ldp-theory", "zeta-one-fair"): (_theory("zeta-one", "delta_opt", 1.0000000002e-6, 0.0),
                                             _theory("zeta-one", "delta_opt", 2e-6)),
    ("compat-expmech-audit", "privacy-claim"): ([("", "claim_holds", 1.0, {}), ("", "claim_holds", 1.0, {})],
                                                [("", "claim_holds", 1.0, {}), ("", "claim_holds", 0.5, {})]),
    ("compat-expmech-audit", "no-delta-needed"): (
        [("", "delta_at_2eps", 0.0, {}), ("", "delta_at_eps", 0.0, {})],
        [("", "delta_at_2eps", 0.0, {}), ("", "delta_at_eps", 1e-30, {})]),
    ("compat-expmech-audit", "utility-guarantee-vacuous"): (
        [("", "alpha_guaranteed_printed", math.inf, {}), ("", "alpha_guaranteed_corrected", 4.3, {})],
        [("", "alpha_guaranteed_printed", 54.9, {}), ("", "alpha_guaranteed_corrected", 0.9, {})]),
}


def _table(metric: str, opt: tuple[float, ...], non_fair: float, acc_opt: tuple[float, ...], acc_nf: float,
           acc_fp: tuple[float, ...] = (0.0, 0.0, 0.0)) -> list[tuple]:
    eps = (0.2, 1.0, 4.0)
    return ([("OPT", metric, v, {"epsilon": e}) for v, e in zip(opt, eps, strict=True)]
            + [("OPT", "accuracy", v, {"epsilon": e}) for v, e in zip(acc_opt, eps, strict=True)]
            + [(m, "accuracy", v, {"epsilon": e}) for m in ("FairProjection-KL", "FairProjection-CE")
               for v, e in zip(acc_fp, eps, strict=True)]
            + [("Non-Fair", metric, non_fair, {"epsilon": None}), ("Non-Fair", "accuracy", acc_nf, {"epsilon": None})])


# Table 5.1 as printed holds every claim; a Non-Fair row that is fairer, or an OPT that loses 0.002, fails them
_T51 = dict(metric="sp_gap", opt=(0.2200, 0.2346, 0.2482), non_fair=0.2553, acc_opt=(0.6798, 0.6802, 0.6804),
            acc_nf=0.6807, acc_fp=(0.6789, 0.6794, 0.6803))
FIXTURES[("thesis-table-5.1", "opt-not-less-accurate-than-fp")] = (
    _table(**_T51), _table(**{**_T51, "acc_fp": (0.6789, 0.6803, 0.6803)}))
FIXTURES[("thesis-table-5.1", "opt-fairer-than-non-fair")] = (
    _table(**_T51), _table(**{**_T51, "acc_opt": (0.6787, 0.6802, 0.6804)}))
FIXTURES[("thesis-table-5.1", "opt-improves-on-non-fair")] = (
    _table(**_T51), _table(**{**_T51, "non_fair": 0.2450}))
_T52 = dict(_T51, metric="meo", opt=(0.1670, 0.1780, 0.1943), non_fair=0.2106)
FIXTURES[("thesis-table-5.2", "opt-fairer-than-non-fair")] = (
    _table(**_T52), _table(**{**_T52, "non_fair": 0.1900}))
FIXTURES[("thesis-table-5.2", "opt-improves-on-non-fair")] = (
    _table(**_T52), _table(**{**_T52, "non_fair": 0.2000}))
_T54 = dict(metric="meo", opt=(0.0573, 0.0580, 0.0583), non_fair=0.0668, acc_opt=(0.8609, 0.8611, 0.8611),
            acc_nf=0.8611, acc_fp=(0.8607, 0.8610, 0.8610))
FIXTURES[("thesis-table-5.4", "opt-fairer-than-non-fair")] = (
    _table(**_T54), _table(**{**_T54, "opt": (0.0573, 0.0680, 0.0583)}))


@pytest.mark.parametrize(("experiment", "name"), sorted(FIXTURES))
def test_each_claim_holds_on_one_tiny_summary_and_fails_on_another(experiment: str, name: str) -> None:
    good, bad = FIXTURES[experiment, name]
    claim = _claim(experiment, name)
    assert evaluate(claim, _rows(*good)) is True
    assert evaluate(claim, _rows(*bad)) is False


@pytest.mark.parametrize("experiment", ["thesis-ldp-theory", "compat-expmech-audit", "thesis-table-5.1",
                                        "thesis-table-5.2"])
def test_every_claim_of_these_experiments_has_a_fixture(experiment: str) -> None:
    names = {c.name for c in load_experiment(experiments_dir() / f"{experiment}.toml").claims}
    shared = {"opt-not-less-accurate-than-fp"} if experiment == "thesis-table-5.2" else set()  # tested on 5.1
    assert names == {n for e, n in FIXTURES if e == experiment} | shared
