"""Thesis Tables 5.1–5.4 study (repro.studies.thesis.fairprojection_tables): matching, metrics, one trial.

Spec: seed-003-thesis.md §6.4, §8, §10 L8.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from repro.engine.spec import get_experiment
from repro.engine.spec import load_experiment as _load
from repro.engine.trial import TrialContext, TrialKey
from repro.fairness.metrics import meo_gap, sp_gap
from repro.studies.thesis.fairprojection_tables import match_on_curve, run_trial

#: the streams the experiment files declare (the subsample and OPT streams shared by the SP and MEO tables)
SCOPES = get_experiment("thesis-table-5.1").scopes

#: the experiment file's [params]: the one source of the study's defaults
FILE_PARAMS = dict(_load(Path(__file__).parents[3] / "experiments" / "thesis-table-5.1.toml").params)


def test_sp_and_meo_on_a_hand_made_table() -> None:
    # group 0: y = [1,1,0,0], ŷ = [1,0,1,0] → TPR 1/2, FPR 1/2, P(ŷ=1) 1/2
    # group 1: y = [1,1,1,0], ŷ = [1,1,1,0] → TPR 1,   FPR 0,   P(ŷ=1) 3/4
    s = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    y = np.array([1, 1, 0, 0, 1, 1, 1, 0])
    pred = np.array([1, 0, 1, 0, 1, 1, 1, 0])
    assert sp_gap(pred, s) == pytest.approx(0.25)
    assert meo_gap(pred, s, y) == pytest.approx((0.5 + 0.5) / 2)


def test_match_interpolates_on_the_bracketing_segment() -> None:
    alphas = np.array([0.0, 0.1, 0.2, 1.0])
    unfair = np.array([0.05, 0.15, 0.25, 0.25])
    acc = np.array([0.60, 0.64, 0.68, 0.68])
    a, u, al, ok = match_on_curve(alphas, unfair, acc, 0.20)
    assert ok and u == 0.20
    assert a == pytest.approx(0.66) and al == pytest.approx(0.15)
    # At the flat loose end the loosest segment wins (least intervention): accuracy of that segment.
    a, u, al, ok = match_on_curve(alphas, unfair, acc, 0.25)
    assert ok and a == pytest.approx(0.68) and al == pytest.approx(1.0)
    # Order of the input does not matter.
    perm = np.array([3, 1, 0, 2])
    assert match_on_curve(alphas[perm], unfair[perm], acc[perm], 0.20) == match_on_curve(alphas, unfair, acc, 0.20)


def test_match_scans_from_the_loosest_tolerance_on_non_monotone_curves() -> None:
    alphas = np.array([0.0, 0.1, 0.2, 0.3])
    unfair = np.array([0.10, 0.30, 0.20, 0.40])     # 0.25 is bracketed by (0.1,0.2) and (0.2,0.3)
    acc = np.array([0.5, 0.6, 0.7, 0.8])
    a, _, al, ok = match_on_curve(alphas, unfair, acc, 0.25)
    # loosest bracketing segment (0.2, 0.3): t = (0.25 − 0.40)/(0.20 − 0.40) = 0.75 from α = 0.3
    assert ok and al == pytest.approx(0.225) and a == pytest.approx(0.725)


def test_match_outside_the_curve_is_flagged() -> None:
    a, u, al, ok = match_on_curve(np.array([0.0, 1.0]), np.array([0.1, 0.2]), np.array([0.6, 0.7]), 0.3)
    assert not ok and (a, u, al) == (0.7, 0.2, 1.0)


@pytest.mark.data
def test_one_trial_on_a_compas_subsample(data_mirror, tmp_path_factory, monkeypatch) -> None:
    monkeypatch.setenv("REPRO_DATA_DIR", str(tmp_path_factory.mktemp("data")))
    params = FILE_PARAMS | {"dataset": "compas", "epsilons": [0.2, 4.0], "tolerances": [0.0, 0.1, 0.2, 1.0],
              "divergences": ["kl", "ce"], "subsample": 2400, "admm_max_iter": 200, "admm_tol": 1e-9}
    out_sp = run_trial({**params, "fairness": "sp"}, TrialContext(TrialKey.of("thesis-table-5.1", scopes=SCOPES)))
    out_meo = run_trial({**params, "fairness": "meo"}, TrialContext(TrialKey.of("thesis-table-5.2", scopes=SCOPES)))
    rec_sp = {(r["method"], r.get("epsilon")): r for r in out_sp.records}
    rec_meo = {(r["method"], r.get("epsilon")): r for r in out_meo.records}
    assert set(rec_sp) == {("Non-Fair", None), ("OPT", 0.2), ("OPT", 4.0), ("FairProjection-KL", 0.2),
                           ("FairProjection-KL", 4.0), ("FairProjection-CE", 0.2), ("FairProjection-CE", 4.0)}
    # Every ε carries its label: OPT's matrix uses the training split's minority group (public-statistics
    # caveat); the base model and FairProjection use the true attribute (non-private, ε only the matched OPT's).
    assert {(m, r["eps_label"]) for (m, _), r in rec_sp.items()} == {
        ("Non-Fair", "non-private"), ("OPT", "public-statistics caveat"), ("FairProjection-KL", "non-private"),
        ("FairProjection-CE", "non-private")}
    assert "minority group" in rec_sp[("OPT", 0.2)]["eps_caveat"]
    assert "matched" in rec_sp[("FairProjection-KL", 0.2)]["eps_caveat"]
    # The SP and MEO tables share the base model and the OPT fits (same split, same perturbation).
    for key in [("Non-Fair", None), ("OPT", 0.2), ("OPT", 4.0)]:
        assert rec_sp[key]["accuracy"] == rec_meo[key]["accuracy"]
    # Each FP row is its own curve read at its OPT row's unfairness (match_on_curve, tested above), in both
    # tables; on this subsample (2,400 rows) every OPT gap lies on the curves, so the matched branch runs.
    for out, rec, metric in ((out_sp, rec_sp, "sp_gap"), (out_meo, rec_meo, "meo")):
        for div, name in (("kl", "FairProjection-KL"), ("ce", "FairProjection-CE")):
            pts = [c for c in out.tables["fp_curve"] if c["divergence"] == div]
            curve = [np.array([c[k] for c in pts]) for k in ("alpha", "unfairness", "accuracy")]
            for eps in (0.2, 4.0):
                r, target = rec[(name, eps)], rec[("OPT", eps)][metric]
                acc, unf, alpha, ok = match_on_curve(*curve, target)
                assert (r["accuracy"], r[metric], r["alpha_matched"], r["matched"]) == (acc, unf, alpha, float(ok))
                assert ok and r[metric] == pytest.approx(target) and 0.0 <= r["alpha_matched"] <= 1.0
    # FP at α = 1 is non-binding on this data: the curve's loose end is the Non-Fair classifier.
    curve = [c for c in out_sp.tables["fp_curve"] if c["alpha"] == 1.0]
    for c in curve:
        assert c["accuracy"] == pytest.approx(rec_sp[("Non-Fair", None)]["accuracy"])
    # The tightest tolerance reduces the SP gap well below Non-Fair's (the projection does something).
    tight = [c for c in out_sp.tables["fp_curve"] if c["alpha"] == 0.0]
    assert all(c["unfairness"] < 0.6 * rec_sp[("Non-Fair", None)]["sp_gap"] for c in tight)
    # Theorem 14's mechanism: overall flip rate p_min·e^{−ε}/2 + (1 − p_min)·1/2 within 4 binomial SEs.
    split = out_sp.tables["split"][0]
    n_train, p_min = split["n_train"], split["minority_share"]
    assert p_min < 0.5
    for row in out_sp.tables["runtime"]:
        if row["method"] == "OPT":
            expected = p_min * math.exp(-row["epsilon"]) / 2 + (1 - p_min) * 0.5
            assert abs(row["flip_rate"] - expected) < 4 * math.sqrt(expected * (1 - expected) / n_train)
