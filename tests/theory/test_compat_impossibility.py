"""Pins every number of the Theorem 1 audit (spec seed-000-002-compat.md §2.3–§2.5, checks C1–C5)."""

from __future__ import annotations

import math
import tomllib
from fractions import Fraction as F
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from repro.engine.claims import evaluate
from repro.engine.runner import summarize
from repro.engine.spec import load_experiment
from repro.engine.trial import TrialContext, TrialKey
from repro.studies.cummings2019 import impossibility as study
from repro.studies.cummings2019 import impossibility_report as study_report
from repro.theory import compat_impossibility as ci

EXPERIMENT = Path(__file__).parents[2] / "experiments" / "compat-impossibility.toml"
ZETAS = (F(1, 100), F(1, 10), F(3, 16))
COARSE = F(1, 4)


def h(*values: int | str) -> ci.Hypothesis:
    return ci.as_hypothesis(values)


# --------------------------------------------------------------------------------------------
# Exact model basics
# --------------------------------------------------------------------------------------------


def test_model_rejects_bad_distributions() -> None:
    with pytest.raises(ValueError):
        ci.ExactModel(ci.PAPER_FEATURES, {z: F(1, 5) for z in ci.PAPER_POINTS})
    with pytest.raises(TypeError):
        ci.ExactModel(ci.PAPER_FEATURES, {z: 0.25 for z in ci.PAPER_POINTS})  # type: ignore[misc]
    with pytest.raises(ValueError):
        ci.paper_neighbour(F(1, 4))
    with pytest.raises(ValueError):
        ci.repaired_neighbour(0, F(1, 5))
    with pytest.raises(ValueError):
        ci.as_hypothesis([2, 0, 0, 0])
    with pytest.raises(ValueError):
        ci.hypothesis_grid(F(2, 7))


def test_statistical_distance_is_zeta() -> None:
    for zeta in ZETAS:
        assert ci.statistical_distance(ci.paper_distribution(), ci.paper_neighbour(zeta)) == zeta
        for a in (0, 1):
            assert ci.statistical_distance(ci.repaired_distribution(), ci.repaired_neighbour(a, zeta)) == zeta


# --------------------------------------------------------------------------------------------
# C1: the paper's construction as printed (E-4)
# --------------------------------------------------------------------------------------------


def test_paper_table_rows_match_spec_2_3() -> None:
    rows = {r["h"]: r for r in ci.paper_table(F(1, 100))}
    assert len(rows) == 16
    fair = {k: r for k, r in rows.items() if r["eo_D"] and r["nontrivial_D"]}
    assert set(fair) == {h(0, 1, 0, 1), h(1, 1, 0, 1), h(0, 1, 1, 1)}
    expected_err = {h(0, 1, 0, 1): F(0), h(1, 1, 0, 1): F(1, 4), h(0, 1, 1, 1): F(1, 4)}
    for key, r in fair.items():
        assert r["err_D"] == r["err_Dprime"] == expected_err[key]
        assert (r["gamma10_D"], r["gamma11_D"]) == (1, 1)
        assert (r["gamma10_Dprime"], r["gamma11_Dprime"]) == (1, 1)
        assert r["eo_Dprime"] and r["nontrivial_Dprime"] and not r["witness"]
    # every row: γ on D′ equals (h1, h3) and err_D = 1/2 + (h0 + h2 − h1 − h3)/4
    for key, r in rows.items():
        h0, h1, h2, h3 = key
        assert (r["gamma10_Dprime"], r["gamma11_Dprime"]) == (h1, h3)
        assert r["err_D"] == F(1, 2) + (h0 + h2 - h1 - h3) / 4
        assert r["joint10_Dprime"] == h1 * F(24, 100)
        assert r["joint11_Dprime"] == h3 * F(26, 100)


@pytest.mark.parametrize("zeta", ZETAS)
def test_paper_construction_does_not_separate(zeta: F) -> None:
    res = ci.check_paper(zeta, COARSE)
    assert res.eo_nontrivial_on_D == 3
    assert res.still_fair_on_Dprime == 3
    assert res.witnesses == 0
    assert res.separates is False
    assert res.grid_eo_nontrivial == 56 and res.grid_witnesses == 0
    assert res.identities_hold
    assert res.statistical_distance == zeta
    assert res.constant_error_D == F(1, 2)


def test_paper_numbers_are_joint_probabilities() -> None:
    for zeta in ZETAS:
        model = ci.ExactModel(ci.PAPER_FEATURES, ci.paper_neighbour(zeta))
        star = ci.COUNTEREXAMPLE
        assert model.joint_positive(star, 1, 0) == F(1, 4) - zeta
        assert model.joint_positive(star, 1, 1) == F(1, 4) + zeta
        assert model.gamma(star, 1, 0) == model.gamma(star, 1, 1) == 1


@pytest.mark.slow
def test_paper_randomized_identities_on_tenths_grid() -> None:
    assert ci.paper_identities_hold(list(ZETAS), F(1, 10))
    res = ci.check_paper(F(1, 100), F(1, 10))
    assert (res.grid_eo_nontrivial, res.grid_witnesses) == (635, 0)


def test_uniform_feasible_algorithm_is_zero_dp_on_paper_pair() -> None:
    loss = ci.paper_uniform_privacy(F(1, 10), COARSE)
    assert loss.max_ratio == 1 and loss.impossible_mass == 0 and loss.max_log_ratio == 0.0


# --------------------------------------------------------------------------------------------
# C2: counterexample h* = (0, 1, 0, 1)
# --------------------------------------------------------------------------------------------


def test_counterexample_on_random_distributions() -> None:
    rng = np.random.default_rng(12345)
    for _ in range(20):
        dist = ci.random_paper_distribution(rng)
        assert all(isinstance(p, F) and p > 0 for p in dist.values()) and sum(dist.values()) == 1
        model = ci.ExactModel(ci.PAPER_FEATURES, dist)
        assert model.gamma(ci.COUNTEREXAMPLE, 1, 0) == model.gamma(ci.COUNTEREXAMPLE, 1, 1) == 1
        assert model.error(ci.COUNTEREXAMPLE) == 0 < model.constant_error()
    res = ci.check_counterexample(np.random.default_rng(7), 50, F(1, 10))
    assert res.n_holds == 50 and res.holds_on_paper_pair
    assert res.max_privacy_loss == 0.0 and res.delta_at_zero == 0


def test_constant_algorithm_is_zero_dp() -> None:
    p = ci.constant_algorithm(ci.COUNTEREXAMPLE, ci.paper_distribution())
    q = ci.constant_algorithm(ci.COUNTEREXAMPLE, ci.paper_neighbour(F(1, 100)))
    assert p == q == {ci.COUNTEREXAMPLE: 1}
    assert ci.hockey_stick_delta(p, q, 0.0) == 0


# --------------------------------------------------------------------------------------------
# C3: repaired construction [X]
# --------------------------------------------------------------------------------------------


def test_repaired_distribution_masses() -> None:
    model = ci.ExactModel(ci.REPAIRED_FEATURES, ci.repaired_distribution())
    assert all(model.group_mass(y, a) == F(1, 4) for y in (0, 1) for a in (0, 1))
    assert model.label_mass(1) == F(1, 2) and model.constant_error() == F(1, 2)
    assert model.error(h(1, 1, 1, 1)) == model.error(h(0, 0, 0, 0)) == F(1, 2)


def test_repaired_unique_hypothesis_and_gamma_at_one_percent() -> None:
    rows = ci.repaired_table(F(1, 100))
    fair = [r for r in rows if r["eo_D"] and r["nontrivial_D"]]
    assert [r["h"] for r in fair] == [ci.REPAIRED_UNIQUE]
    (r,) = fair
    assert r["err_D"] == F(1, 4)
    assert r["gamma10_D"] == r["gamma11_D"] == F(3, 4)
    assert r["gamma10_Dprime0"] == F(71, 100) and r["gamma11_Dprime0"] == F(3, 4)
    assert r["in_S0"] and not r["in_S1"] and not r["eo_Dprime0"] and r["witness"]


@pytest.mark.parametrize("zeta", ZETAS)
def test_repaired_construction_separates(zeta: F) -> None:
    res = ci.check_repaired(zeta, COARSE)
    assert res.eo_nontrivial_on_D == 1 and res.witnesses == 1 and res.separates
    assert res.unique_h == ci.REPAIRED_UNIQUE
    assert res.gamma10_Dprime0 == F(3, 4) - 4 * zeta and res.gamma11_Dprime0 == F(3, 4)
    assert res.statistical_distance == zeta
    assert res.grid_eo_nontrivial == res.grid_witnesses == res.grid_in_s0_s1 == 16
    assert res.identities_hold


@pytest.mark.slow
def test_repaired_grid_on_tenths() -> None:
    res = ci.check_repaired(F(1, 100), F(1, 10))
    assert res.grid_eo_nontrivial == res.grid_witnesses == res.grid_in_s0_s1 == 181
    assert res.identities_hold


def test_repaired_identity_fails_for_wrong_formula() -> None:
    # Sanity: the identity checker is not vacuous: the shift is 4ζ, not 2ζ.
    d = ci.ExactModel(ci.REPAIRED_FEATURES, ci.repaired_distribution())
    d0 = ci.ExactModel(ci.REPAIRED_FEATURES, ci.repaired_neighbour(0, F(1, 10)))
    hyp = h("1/2", "1/5", 1, 0)
    assert d0.eo_gap(hyp) - d.eo_gap(hyp) == 4 * F(1, 10) * (F(1, 5) - F(1, 2))
    assert d0.eo_gap(hyp) - d.eo_gap(hyp) != 2 * F(1, 10) * (F(1, 5) - F(1, 2))


# --------------------------------------------------------------------------------------------
# C4: privacy loss [X]
# --------------------------------------------------------------------------------------------


def test_privacy_loss_and_hockey_stick_basics() -> None:
    a, b = h(1, 0, 1, 0), h(0, 0, 1, 0)
    p = {a: F(3, 4), b: F(1, 4)}
    q = {a: F(1, 4), b: F(3, 4)}
    assert ci.privacy_loss(p, q).max_ratio == 3
    assert ci.privacy_loss(p, q).max_log_ratio == pytest.approx(math.log(3))
    assert ci.hockey_stick_delta(p, q, 0.0) == F(1, 2)
    assert ci.hockey_stick_delta(p, q, math.log(3) + 1e-12) == 0
    only = {a: F(1)}
    loss = ci.privacy_loss(only, {b: F(1)})
    assert loss.max_ratio is None and loss.max_log_ratio == math.inf and loss.impossible_mass == 1
    assert ci.hockey_stick_delta(only, {b: F(1)}, 50.0) == 1


def test_exponential_mechanism_closed_form() -> None:
    """Pr[h] = exp(−β·err(h)) / Σ_{feasible h'} exp(−β·err(h')) on the feasible set only, an exact rational
    distribution (sums to 1 exactly); lower error is more likely (β > 0), β = 0 is uniform."""
    a, b, c, d = h(1, 0, 1, 0), h(0, 0, 1, 0), h(1, 1, 1, 0), h(0, 0, 0, 0)
    err = {a: F(0), b: F(1, 4), c: F(1), d: F(0)}
    beta = 2.0
    out = ci.exponential_mechanism([a, b, c, d], lambda hh: hh != d, err.__getitem__, beta)
    assert set(out) == {a, b, c} and sum(out.values()) == 1 and all(isinstance(v, F) for v in out.values())
    z = sum(math.exp(-beta * float(err[hh])) for hh in (a, b, c))
    for hh in (a, b, c):
        assert float(out[hh]) == pytest.approx(math.exp(-beta * float(err[hh])) / z, rel=1e-14)
    assert out[a] > out[b] > out[c]
    assert float(out[a] / out[c]) == pytest.approx(math.exp(2.0), rel=1e-14)
    flat = ci.exponential_mechanism([a, b, c, d], lambda hh: hh != d, err.__getitem__, 0.0)
    assert flat == {a: F(1, 3), b: F(1, 3), c: F(1, 3)}
    with pytest.raises(ValueError, match="no feasible"):
        ci.exponential_mechanism([a, b], lambda hh: False, err.__getitem__, beta)


@pytest.mark.parametrize("zeta", ZETAS)
def test_always_fair_algorithms_need_delta_half(zeta: F) -> None:
    res = ci.check_privacy_loss(zeta, COARSE)
    assert res.delta_floor >= F(1, 2) and res.min_delta_bound >= F(1, 2)
    assert res.max_log_ratio == math.inf
    assert res.s_masses["uniform-feasible"] == (F(15, 16), F(1, 16))
    assert res.delta_floor == F(15, 16)
    for s0, s1 in res.s_masses.values():
        assert s0 + s1 == 1
    for row in res.rows:
        assert row["delta"] >= row["impossible_mass"]
    # in the worse neighbour, every ε needs δ ≥ 1/2 for every algorithm
    for algorithm in res.s_masses:
        for eps in ci.EPSILON_GRID:
            worst = max(
                r["delta"] for r in res.rows if r["algorithm"] == algorithm and r["epsilon"] == eps
            )
            assert worst >= F(1, 2)


@pytest.mark.slow
def test_privacy_loss_on_tenths_grid() -> None:
    res = ci.check_privacy_loss(F(1, 100), F(1, 10))
    assert res.n_feasible["uniform-feasible"] == 181
    assert res.s_masses["uniform-feasible"] == (F(171, 181), F(10, 181))
    assert res.delta_floor >= F(1, 2)


# --------------------------------------------------------------------------------------------
# C5: slack [X]
# --------------------------------------------------------------------------------------------


def test_slack_rule_and_small_step_survival() -> None:
    small = ci.check_slack(F(1, 100), F(1, 10), COARSE)
    assert small.rule_holds
    assert (small.n_fair, small.n_broken) == (52, 4)
    assert small.surviving_fraction == F(12, 13)
    assert small.delta_floor == F(7, 57) < F(1, 2)
    large = ci.check_slack(F(3, 16), F(1, 10), COARSE)
    assert large.rule_holds and large.surviving_fraction == 0


# --------------------------------------------------------------------------------------------
# Study module: declared metrics, tables, plot, report
# --------------------------------------------------------------------------------------------


def _spec() -> dict:
    return tomllib.loads(EXPERIMENT.read_text(encoding="utf-8"))


def _ctx(cell: dict) -> TrialContext:
    return TrialContext(TrialKey.of("compat-impossibility", cell))


def _run_all(params_extra: dict) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    spec = _spec()
    trial_rows, tables = [], {}
    for check in spec["grid"]["check"]:
        for zeta in spec["grid"]["zeta"]:
            cell = {"check": check, "zeta": zeta}
            params = {**spec["params"], **params_extra, **cell, "variant": "paper"}
            out = study.run_trial(params, _ctx(cell))
            lead = {"result_id": spec["id"], "method": "", "setting": _ctx(cell).setting, "repetition": 0}
            for rec in out.records:
                trial_rows.append({**lead, **cell, **rec})
            for name, rows in out.tables.items():
                tables.setdefault(name, []).extend({**lead, **r} for r in rows)
    return pd.DataFrame(trial_rows), {k: pd.DataFrame(v) for k, v in tables.items()}


@pytest.fixture(scope="module")
def smoke_results() -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    return _run_all({"n_distributions": 30, "grid_step": "1/4"})


def test_run_trial_returns_only_declared_scalar_metrics(smoke_results) -> None:
    spec = _spec()
    declared = {m["name"] for m in spec["metrics"]}
    assert {r["metric"] for r in spec["references"]} <= declared
    trials, _ = smoke_results
    metric_cols = set(trials.columns) - {"result_id", "method", "setting", "repetition", "check", "zeta"}
    assert metric_cols <= declared
    assert declared <= metric_cols  # every declared metric is produced by some check
    for col in metric_cols:
        assert all(isinstance(v, int | float) for v in trials[col].dropna())


def test_run_trial_values(smoke_results) -> None:
    trials, tables = smoke_results
    c1 = trials[trials["check"] == "C1-paper"].set_index("zeta")
    assert (c1["separates"] == 0).all() and (c1["witnesses"] == 0).all()
    assert (c1["eo_nontrivial_on_D"] == 3).all() and (c1["gamma10_Dprime"] == 1).all()
    assert c1.loc["1/100", "joint10_Dprime"] == pytest.approx(0.24)
    assert c1.loc["1/100", "joint11_Dprime"] == pytest.approx(0.26)
    c2 = trials[trials["check"] == "C2-counterexample"]
    assert (c2["counterexample_holds"] == 1.0).all() and (c2["max_privacy_loss"] == 0).all()
    c3 = trials[trials["check"] == "C3-repaired"].set_index("zeta")
    assert c3.loc["1/100", "gamma10_Dprime"] == pytest.approx(0.71)
    assert (c3["separates"] == 1).all() and (c3["identities_hold"] == 1).all()
    c4 = trials[trials["check"] == "C4-privacy-loss"]
    assert (c4["min_delta_bound"] >= 0.5).all() and (c4["delta_floor"] >= 0.5).all()
    assert np.isinf(c4["max_privacy_loss"]).all()
    paper_rows = tables["paper_hypotheses"]
    star = paper_rows[(paper_rows["h"] == "(0,1,0,1)") & (paper_rows["zeta"] == "1/100")].iloc[0]
    assert star["joint10_Dprime"] == "6/25" and star["err_D"] == "0" and bool(star["eo_Dprime"]) is True
    rep = tables["repaired_hypotheses"]
    unique = rep[(rep["h"] == "(1,0,1,0)") & (rep["zeta"] == "1/100")].iloc[0]
    assert unique["gamma10_Dprime0"] == "71/100" and unique["source"] == "ours [X]"


def test_unknown_check_raises() -> None:
    with pytest.raises(ValueError):
        study.run_trial({"check": "C9", "zeta": "1/10"}, _ctx({"check": "C9"}))


def test_plot_and_report_from_stand_in_bundle(smoke_results, tmp_path: Path) -> None:
    trials, tables = smoke_results
    spec = load_experiment(EXPERIMENT)
    bundle = SimpleNamespace(
        spec=spec,
        trials=trials,
        summary=summarize(spec, trials, [_ctx({"check": c, "zeta": z}).key.group("")
                                         for c, z in zip(trials["check"], trials["zeta"], strict=True)]),
        run={"params": {}},
        table=lambda name, default=None: tables.get(name, default),
        directory=tmp_path,
    )
    paths = study_report.plot(bundle, tmp_path / "figs")
    assert {p.suffix for p in paths} == {".png", ".pdf"}
    assert all(p.exists() and p.stat().st_size > 0 for p in paths)
    text = study_report.report_markdown(bundle)
    assert "does **not** separate" in text
    assert "ours, not the paper's" in text and "δ ≥ ½" in text
    assert "0-DP" in text and "Caveats" in text
    assert "as the repaired proof needs" in text and "as the repaired theorem says" in text


def _summary(rows: list[tuple[str, str, float]]) -> pd.DataFrame:
    return pd.DataFrame([{"method": "", "metric": m, "mean": v, "check": c} for c, m, v in rows])


#: per claim of compat-impossibility: summary rows on which it holds, and rows on which it fails
_CLAIM_FIXTURES = {
    "printed-construction-separates": ([("C1-paper", "separates", 1)], [("C1-paper", "separates", 0)]),
    "counterexample": ([("C2-counterexample", "counterexample_holds", 1.0)],
                       [("C2-counterexample", "counterexample_holds", 0.97)]),
    "repaired-separates": ([("C3-repaired", "separates", 1), ("C3-repaired", "identities_hold", 1)],
                           [("C3-repaired", "separates", 1), ("C3-repaired", "identities_hold", 0)]),
    "delta-floor": ([("C4-privacy-loss", "delta_floor", 0.5)], [("C4-privacy-loss", "delta_floor", 0.49)]),
    "slack-rule": ([("C5-slack", "identities_hold", 1)], [("C5-slack", "identities_hold", 0)]),
}


@pytest.mark.parametrize("name", sorted(_CLAIM_FIXTURES))
def test_each_claim_holds_and_fails_on_a_tiny_summary(name: str) -> None:
    claim = load_experiment(EXPERIMENT).claim(name)
    good, bad = _CLAIM_FIXTURES[name]
    assert evaluate(claim, _summary(good)) is True
    assert evaluate(claim, _summary(bad)) is False


def test_every_claim_has_a_fixture() -> None:
    assert {c.name for c in load_experiment(EXPERIMENT).claims} == set(_CLAIM_FIXTURES)
