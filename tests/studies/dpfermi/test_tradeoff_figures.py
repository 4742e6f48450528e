"""The DP-FERMI figures study: reference data, curve comparison helpers, claims, one trial per method."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import repro.studies.dpfermi.tradeoff_figures as study
import repro.studies.dpfermi.tradeoff_figures_report as report
from repro.datasets.tabular import TabularDataset
from repro.engine.spec import load_experiment
from repro.engine.spec import load_experiment as _load
from repro.engine.trial import TrialContext, TrialKey
from repro.errors import InvalidParameterError, UnknownNameError
from repro.privacy.group import SHARED_NOISE

#: the streams the tabular figures declare (DP-FERMI's tuning search)
SCOPES = load_experiment(Path(__file__).parents[3] / "experiments" / "dpfermi-fig-2.toml").scopes

#: the experiment file's [params]: the one source of the study's defaults
FILE_PARAMS = dict(_load(Path(__file__).parents[3] / "experiments" / "dpfermi-fig-2.toml").params)

EXPERIMENTS = Path(__file__).parents[3] / "experiments"
FIGS = [2, 3, 4, 6, 7, 8, 9, 10]


def test_released_csv_is_complete_and_data_only() -> None:
    """Appendix A (Adult, Credit Card) and the Parkinsons / Retired Adult curves (issue 37): 4 ε × grid points
    per (dataset, method), values in [0, 1], provenance on every row."""
    df = pd.read_csv(report.REFERENCE_CSV)
    assert set(df["dataset"]) == {"adult", "credit-card", "parkinsons", "retired-adult"}
    appendix = df["dataset"].isin(["adult", "credit-card"])
    assert df.loc[appendix, "source"].str.contains("Appendix A").all()
    assert df.loc[~appendix, "source"].str.contains("seed-004-dpfermi-parkinsons-retired-curves.json").all()
    assert df["source"].str.contains("commit 5360438").all()
    assert df[["error", "violation"]].apply(lambda c: c.between(0, 1)).all().all()
    counts = df.groupby(["dataset", "fairness", "method"]).size().to_dict()
    assert counts[("adult", "dp", "dp-fermi")] == 20 and counts[("credit-card", "dp", "dp-fermi")] == 24
    assert counts[("adult", "eo", "dp-fermi")] == 15 and counts[("credit-card", "eo", "dp-fermi")] == 15
    assert counts[("adult", "eo", "jagielski-2019")] == 31 and counts[("adult", "dp", "pf-ld")] == 4
    assert counts[("parkinsons", "dp", "dp-fermi")] == 16 and counts[("retired-adult", "dp", "dp-fermi")] == 24
    assert counts[("parkinsons", "dp", "pf-ld")] == 4 and counts[("retired-adult", "dp", "pf-ld")] == 4
    assert ("parkinsons", "eo", "dp-fermi") not in counts and ("retired-adult", "eo", "dp-fermi") not in counts
    # spot values of the released .pt files (JSON of the spec, checked against the files at 5360438)
    row = df[(df.dataset == "parkinsons") & (df.method == "dp-fermi") & (df.epsilon == 1.0) & (df.knob == 1.0)].iloc[0]
    assert (row.error, row.violation, row.band_lower, row.band_upper) == (0.0865, 0.0183, 0.0118, 0.0248)
    row = df[(df.dataset == "adult") & (df.fairness == "dp") & (df.method == "dp-fermi") & (df.epsilon == 1.0)
             & (df.knob == 0.0)].iloc[0]
    assert (row.error, row.violation) == (0.1585, 0.2017)       # spec §9.3 claim 4 numbers


@pytest.mark.parametrize("fig", FIGS)
def test_experiment_files_load_and_match_the_csv(fig: int) -> None:
    spec = load_experiment(EXPERIMENTS / f"dpfermi-fig-{fig}.toml")
    assert spec.variants == ("reference", "strict", "strict-all")
    assert spec.profile("full").seeds == 15 and spec.params["epochs"] == 200
    ref = report.released_curves(spec.params["dataset"], spec.params["fairness"])
    ref = ref[ref.epsilon.isin(spec.grid["epsilon"])]  # Figures 3 and 8 share the Parkinsons curves
    for r in spec.references:
        eps = r.setting["epsilon"]
        rows = ref[(ref.method == r.method) & np.isclose(ref.epsilon, eps)]
        if r.method == "dp-fermi":
            rows = rows[np.isclose(rows.knob.astype(float), r.setting["knob"])]
        assert len(rows) == 1 and rows[r.metric].iloc[0] == r.value
    n_expected = len(ref[ref.method.isin(["dp-fermi", "pf-ld"])]) * 2
    assert len(spec.references) == n_expected


def test_lower_envelope() -> None:
    e = np.array([0.10, 0.20, 0.30])
    v = np.array([0.20, 0.10, 0.00])
    assert math.isnan(report.lower_envelope(e, v, 0.05))
    assert report.lower_envelope(e, v, 0.10) == pytest.approx(0.20)
    assert report.lower_envelope(e, v, 0.15) == pytest.approx(0.15)
    assert report.lower_envelope(e, v, 0.50) == pytest.approx(0.0)
    # a curve that bends back: the best point to the left counts
    assert report.lower_envelope(np.array([0.1, 0.3, 0.2]), np.array([0.3, 0.0, 0.2]), 0.25) == pytest.approx(0.075)


def test_curve_distance() -> None:
    ours = np.array([[0.0, 0.0], [1.0, 0.0]])
    assert report.curve_distance(ours, np.array([[0.5, 0.3], [2.0, 0.0]])) == pytest.approx((0.3 + 1.0) / 2)
    assert report.curve_distance(np.array([[0.0, 0.0]]), np.array([[3.0, 4.0]])) == pytest.approx(5.0)


def _trials(fermi, tran, pf, eps=1.0, nonpriv=0.15):
    rows = []
    for rep in range(2):
        for k, (e, v) in fermi.items():
            rows.append(dict(method="dp-fermi", epsilon=eps, knob=k, error=e, violation=v, repetition=rep,
                             error_nonprivate=nonpriv))
        for k, (e, v) in tran.items():
            rows.append(dict(method="tran-2021a", epsilon=eps, knob=k, error=e, violation=v, repetition=rep))
        rows.append(dict(method="pf-ld", epsilon=eps, knob=np.nan, error=pf[0], violation=pf[1], repetition=rep))
    return pd.DataFrame(rows)


def test_claim_verdicts() -> None:
    fermi = {0.0: (0.16, 0.20), 0.5: (0.17, 0.10), 1.0: (0.19, 0.01)}
    t = _trials(fermi, {0.0: (0.16, 0.20), 1.0: (0.20, 0.05), 5.0: (0.25, 0.02)}, (0.18, 0.06))
    v = {(r["claim"], r["against"]): r for r in report.claim_verdicts(t, "dp")}
    assert v[("1", "tran-2021a")]["holds"] and v[("1", "tran-2021a")]["comparable"] == 3
    assert v[("1", "pf-ld")]["holds"]
    assert v[("3", "λ grid")]["holds"]
    assert v[("4", "non-private λ=0")]["holds"] and v[("4", "non-private λ=0")]["beaten"] == pytest.approx(0.01)
    worse = _trials({0.0: (0.16, 0.20), 1.0: (0.30, 0.15)}, {0.0: (0.16, 0.20)}, (0.18, 0.02), nonpriv=0.10)
    w = {(r["claim"], r["against"]): r for r in report.claim_verdicts(worse, "dp")}
    assert not w[("1", "pf-ld")]["holds"]
    assert w[("3", "λ grid")]["holds"]
    assert not w[("4", "non-private λ=0")]["holds"]
    left = _trials({0.0: (0.20, 0.2), 1.0: (0.25, 0.1)}, {0.0: (0.16, 0.3)}, (0.18, 0.02))
    lv = {(r["claim"], r["against"]): r for r in report.claim_verdicts(left, "dp")}
    assert lv[("1", "pf-ld")]["holds"] is None and lv[("1", "pf-ld")]["comparable"] == 0
    non_mono = _trials({0.0: (0.16, 0.10), 1.0: (0.15, 0.20)}, {}, (0.18, 0.02))
    nm = {(r["claim"], r["against"]): r for r in report.claim_verdicts(non_mono, "dp")}
    assert not nm[("3", "λ grid")]["holds"]


def _synthetic(n: int = 1600, seed: int = 0) -> TabularDataset:
    rng = np.random.default_rng(seed)
    s = (rng.random(n) < 0.4).astype(np.int8)
    X = rng.normal(size=(n, 5)) + s[:, None] * 0.7
    y = (rng.random(n) < 1 / (1 + np.exp(-(X[:, 0] + X[:, 1] - 0.5)))).astype(np.int8)
    return TabularDataset(name="synthetic", X=X, y=y, s=s, feature_names=tuple("abcde"),
                          numeric_columns=(0, 1, 2, 3, 4), group_names=("g0", "g1"), description="test",
                          source="synthetic")


@pytest.mark.parametrize(("method", "fairness", "variant"), [
    ("dp-fermi", "dp", "reference"), ("dp-fermi", "eo", "strict"), ("dp-fermi", "dp", "strict-all"),
    ("tran-2021a", "dp", "reference"),
    ("pf-ld", "eo", "reference"), ("jagielski-2019", "eo", "reference")])
def test_run_trial_each_method(monkeypatch, method: str, fairness: str, variant: str) -> None:
    monkeypatch.setattr(study, "load_dataset", lambda name, data="clean": _synthetic())
    params = FILE_PARAMS | dict(dataset="synthetic", data="clean", fairness=fairness, epsilon=3.0, method=method,
                                variant=variant,
                  lambdas=[0.0, 1.0], strict_lambdas=[0.0, 2.0], tran_gammas=[0.0, 1.0],
                  jagielski_bounds=[0.0, 10.0], jagielski_rounds=2, jagielski_learner_epochs=1, epochs=3,
                  baseline_epochs=3, batch_size=256, hyperparameters=["fixed"])
    ctx = TrialContext(TrialKey.of("test", {"method": method}, scopes=SCOPES))
    out = study.run_trial(params, ctx)
    n_points = {"dp-fermi": 2, "tran-2021a": 2, "pf-ld": 1, "jagielski-2019": 2}[method]
    assert len(out.records) == n_points
    for r in out.records:
        assert r["method"] == method
        assert 0 <= r["error"] <= 1 and 0 <= r["violation"] <= 1
        assert r["violation"] == (r["dp_violation"] if fairness == "dp" else r["eo_violation"])
    priv = out.tables["privacy"][0]
    assert priv["epsilon"] == 3.0 and priv["noise_multiplier"] > 0
    # what one ε covers: one row (a person here) and, for DP-FERMI, one model of the shared-noise pass
    assert (priv["rows_per_person"], priv["eps_per_person"], priv["delta_per_person"]) == (1, 3.0, priv["delta"])
    assert (priv.get("joint_release") == SHARED_NOISE) is (method == "dp-fermi")
    if method == "dp-fermi" and variant == "reference":
        assert priv["sigma_theta"] > 0 and priv["eps_joint_rdp"] > priv["eps_block_rdp"]
        assert "error_nonprivate" in out.records[0]
    if variant.startswith("strict"):
        assert ("sensitive attribute" in priv["guarantee"]) is (variant == "strict")
        assert priv["eps_joint_pld"] == pytest.approx(3.0, abs=0.05)
        # issue 14 / 21: strict (sensitive only) is accounted by the exact strict accountant, not add/remove
        # amplification by subsampling; strict-all by the PLD of DP-SGD
        assert ("strict accountant" in priv["accountant"]) is (variant == "strict")
    from repro.studies.dpfermi import methods as method_registry

    declared = method_registry.get(method).guarantee_for(variant).with_epsilon(3.0, priv["delta"])
    assert priv["eps_label"] == declared.label.value and priv["guarantee"] == declared.describe()
    assert all(r["eps_label"] == priv["eps_label"] for r in out.records)
    again = study.run_trial(params, ctx)
    assert again.records == out.records                       # a pure function of (params, seed)



@pytest.mark.parametrize("method", ["dp-fermi", "jagielski-2019"])
def test_privacy_rows_state_the_per_person_guarantee(monkeypatch, method: str) -> None:
    """Data with two rows per person (the authors' Adult file): every privacy row gives the group-privacy
    (2ε, (1 + e^ε)δ) beside the per-row ε, and names the unit (issue 21 audit)."""
    import dataclasses

    base = _synthetic()
    ds = dataclasses.replace(base, extra={**base.extra, "rows_per_person": 2, "privacy_unit": "2 rows per person (test)"})
    monkeypatch.setattr(study, "load_dataset", lambda name, data="clean": ds)
    params = FILE_PARAMS | dict(dataset="synthetic", data="authors", fairness="eo", epsilon=1.0, method=method,
                                variant="reference", lambdas=[0.0, 1.0], jagielski_bounds=[0.0, 10.0],
                                jagielski_rounds=2, jagielski_learner_epochs=1, epochs=2, baseline_epochs=2,
                                batch_size=256, hyperparameters=["fixed"])
    out = study.run_trial(params, TrialContext(TrialKey.of("test", {"method": method}, scopes=SCOPES)))
    for priv in out.tables["privacy"]:
        assert priv["rows_per_person"] == 2 and priv["privacy_unit"] == "2 rows per person (test)"
        assert priv["eps_per_person"] == pytest.approx(2 * priv["epsilon"])
        assert priv["delta_per_person"] == pytest.approx(priv["delta"] * (1 + math.exp(priv["epsilon"])))

def test_run_trial_rejects_bad_input(monkeypatch) -> None:
    monkeypatch.setattr(study, "load_dataset", lambda name, data="clean": _synthetic())
    base = FILE_PARAMS | dict(dataset="synthetic", data="clean", fairness="dp", epsilon=1.0, method="dp-fermi",
                              lambdas=[0.0], epochs=1)
    ctx = TrialContext(TrialKey.of("test", {"method": "dp-fermi", "x": 0}, scopes=SCOPES))
    with pytest.raises(Exception, match="fairness"):
        study.run_trial(base | {"fairness": "calibration"}, ctx)
    with pytest.raises(Exception, match="variant"):
        study.run_trial(base | {"variant": "loose"}, ctx)
    with pytest.raises(Exception, match="method"):
        study.run_trial(base | {"method": "fairlearn"}, ctx)


def test_unknown_dataset() -> None:
    """The experiment's [domains] decides which datasets run; the study refuses only what is not tabular."""
    with pytest.raises(UnknownNameError, match="unknown dataset 'no-such-data'"):
        study.load_dataset("no-such-data", "clean")
    with pytest.raises(InvalidParameterError, match="needs tabular data; dataset 'utkface' is image"):
        study.load_dataset("utkface", "clean")


def test_gain_over_pf_ld_on_the_released_eo_values_matches_the_spec() -> None:
    # spec §9.3 [I]: at PF-LD's error, DP-FERMI's (interpolated) EO violation is lower by 62.8 % on average and
    # 70.9 % in the median over the 6 released EO cells; our envelope reading must agree to rounding.
    gains = []
    for ds in ("adult", "credit-card"):
        ref = report.released_curves(ds, "eo")
        ref = ref[np.isfinite(ref.epsilon)]
        gains += [v["gain"] for v in report.claim_verdicts(ref.assign(knob=ref["knob"].astype(float)), "eo")
                  if v["against"] == "pf-ld"]
    assert len(gains) == 6
    assert np.mean(gains) == pytest.approx(0.628, abs=0.01)
    assert np.median(gains) == pytest.approx(0.709, abs=0.01)


def test_strict_block_epsilon_is_below_the_joint_one() -> None:
    # `strict`: each block alone has multiplier √2·z, so its ε is below the joint ε; `strict-all` clips the joint
    # gradient, so a block's ε is the joint ε. Both by the exact strict accountant (issue 21).
    from repro.privacy.strict_accountant import strict_epsilon
    from repro.studies.dpfermi.tradeoff_figures_report import _strict_block_epsilon

    row = pd.Series({"noise_multiplier": 3.0, "sampling_probability": 0.05, "steps": 400, "delta": 1e-6})
    joint = strict_epsilon(3.0, 0.05, 400, 1e-6)
    block = _strict_block_epsilon("strict", row)
    assert 0.4 * joint < block < 0.8 * joint
    assert _strict_block_epsilon("strict-all", pd.concat([row, pd.Series({"eps_joint_pld": joint})])) == joint


def test_every_method_and_variant_declares_its_guarantee() -> None:
    # issue 14 defect 3, issue 20 item 4: each learner declares its guarantee next to its code. The baselines
    # whose penalty couples samples are nominal; strict variants and Jagielski carry the public-statistics
    # caveat; the authors' reference path is nominal.
    import pytest

    from repro.errors import InvalidParameterError, UnknownNameError
    from repro.privacy.guarantee import Label, Neighbouring
    from repro.studies.dpfermi import methods as method_registry
    from repro.studies.dpfermi.tradeoff_figures import epsilon_label

    def g(method: str, variant: str = "reference"):
        return method_registry.get(method).guarantee_for(variant)

    assert g("tran-2021a").label is g("pf-ld").label is Label.NOMINAL
    assert g("jagielski-2019").label is Label.PUBLIC_STATISTICS
    assert g("dp-fermi", "reference").label is Label.NOMINAL
    assert g("dp-fermi", "strict").label is g("dp-fermi", "strict-all").label is Label.PUBLIC_STATISTICS
    assert g("dp-fermi", "strict").relation is Neighbouring.REPLACE_SENSITIVE_ATTRIBUTE
    assert g("dp-fermi", "strict-all").relation is Neighbouring.ADD_OR_REMOVE_ONE
    assert all("standardised" in g(m).caveat for m in ("tran-2021a", "pf-ld", "jagielski-2019"))
    assert epsilon_label("dp-fermi", "strict") == Label.PUBLIC_STATISTICS.value
    with pytest.raises(InvalidParameterError, match="declares no guarantee for variant 'paper'"):
        epsilon_label("dp-fermi", "paper")
    with pytest.raises(UnknownNameError, match="unknown method 'fairlearn'; choices: tran-2021a, jagielski-2019, dp-fermi, pf-ld"):
        epsilon_label("fairlearn")


def _tuning_params(**kw) -> dict:
    return FILE_PARAMS | dict(dataset="synthetic", fairness="dp", epsilon=1.0, method="dp-fermi", variant="reference",
                lambdas=[0.0, 1.0], epochs=2, batch_size=256, hyperparameters=["tuned", "fixed"],
                tune_clips=[1.0, 5.0], tune_radii=[1.0, 5.0], tune_lr_thetas=[0.005, 0.01], tune_seeds=2) | kw


@pytest.mark.parametrize("data", ["authors", "clean"])
def test_tuned_and_fixed_settings_are_trained_together(monkeypatch, data: str) -> None:
    """Issue 13 item 3: one (L, D, η_θ) per cell for every repetition, recorded; `fixed` is L = D = 5."""
    monkeypatch.setattr(study, "load_dataset", lambda name, data="clean": _synthetic())
    outs = [study.run_trial(_tuning_params(data=data), TrialContext(TrialKey.of("test", {"method": "dp-fermi"}, repetition=rep, scopes=SCOPES)))
            for rep in (0, 1)]
    for out in outs:
        by_hyper = {h: [r for r in out.records if r["hyper"] == h] for h in ("tuned", "fixed")}
        assert [len(v) for v in by_hyper.values()] == [2, 2]
        assert all((r["clip_L"], r["radius_D"], r["lr_theta"]) == (5.0, 5.0, 0.005) for r in by_hyper["fixed"])
        assert {row["hyper"] for row in out.tables["privacy"]} == {"tuned", "fixed"}
    tuned = [{(r["clip_L"], r["radius_D"], r["lr_theta"]) for r in out.records if r["hyper"] == "tuned"}
             for out in outs]
    assert len(tuned[0]) == 1 and tuned[0] == tuned[1]          # the same choice for every repetition
    assert "tuning" in outs[0].tables and "tuning" not in outs[1].tables
    table = pd.DataFrame(outs[0].tables["tuning"])
    assert len(table) == 8 and table["chosen"].sum() == 1
    best = table[table["chosen"]].iloc[0]
    assert (best["clip_L"], best["radius_D"], best["lr_theta"]) == next(iter(tuned[0]))
    assert best["validation_error"] == table["validation_error"].min()


def test_tuning_breaks_ties_toward_the_larger_radius_and_clip() -> None:
    """At ε = ∞ every grid point is noiseless and the clip never fires: all tie, the rule picks max D, max L, min η_θ."""
    from repro.learners.dp_fermi import REFERENCE
    from repro.studies.dpfermi.tuning import TuningGrid, tune_reference

    ds = _synthetic(n=800)
    grid = TuningGrid(clips=(2.0, 3.0), radii=(1.0, 2.0), lr_thetas=(0.01, 0.005), seeds=1)
    base = REFERENCE.with_(epochs=1, batch_size=200)
    choice = tune_reference(ds.X, ds.y.astype(int), ds.s.astype(int), base=base, epsilon=math.inf, n_final=800,
                            rho_final=0.3, delta=1e-6, grid=grid, carve_rng=np.random.default_rng(0),
                            train_rngs=[np.random.default_rng(1)])
    errors = {r["validation_error"] for r in choice.rows if r["lr_theta"] == 0.005}
    assert len(errors) == 1                                      # a genuine tie across (L, D)
    assert (choice.clip, choice.radius) == (3.0, 2.0)
    with pytest.raises(Exception, match="tune_validation_fraction"):
        TuningGrid.from_params({"tune_clips": [1], "tune_radii": [1], "tune_lr_thetas": [0.01], "tune_seeds": 3,
                                "tune_validation_fraction": 1.5})


def test_clean_data_tuning_runs_once_for_all_repetitions(monkeypatch) -> None:
    """Regression: the search used the calling repetition's n, T and ρ in its key, so with a split per
    repetition each repetition ran its own search (and could choose differently)."""
    import repro.engine.cache as cache_mod
    import repro.studies.dpfermi.tuning as tuning

    monkeypatch.setattr(study, "load_dataset", lambda name, data="clean": _synthetic())
    monkeypatch.setattr(cache_mod, "_SHARED", {})
    calls = []
    real = tuning.tune_reference
    monkeypatch.setattr(tuning, "tune_reference", lambda *a, **k: calls.append(k["rho_final"]) or real(*a, **k))
    for rep in range(3):
        study.run_trial(_tuning_params(data="clean", tune_seeds=1), TrialContext(TrialKey.of("test", {"method": "dp-fermi"}, repetition=rep, scopes=SCOPES)))
    assert len(calls) == 1


def test_authors_eo_fixes_the_step_and_tunes_clip_and_radius(monkeypatch) -> None:
    """Issue 22: `authors-eo` = the tuning rule over (L, D) with η_θ fixed at authors_lr_theta, beside `tuned`;
    the privacy rows record the data facts of the data-bound ε and the all-negative test error."""
    monkeypatch.setattr(study, "load_dataset", lambda name, data="clean": _synthetic())
    params = _tuning_params(data="authors", fairness="eo", hyperparameters=["authors-eo", "tuned"],
                            authors_lr_theta=0.005, tune_lr_thetas=[0.01, 0.02], tune_seeds=1)
    out = study.run_trial(params, TrialContext(TrialKey.of("test", {"method": "dp-fermi"}, scopes=SCOPES)))
    eo = [r for r in out.records if r["hyper"] == "authors-eo"]
    assert len(eo) == 2 and {r["lr_theta"] for r in eo} == {0.005}
    assert {(r["clip_L"], r["radius_D"]) for r in eo} <= {(c, d) for c in (1.0, 5.0) for d in (1.0, 5.0)}
    assert {r["lr_theta"] for r in out.records if r["hyper"] == "tuned"} <= {0.01, 0.02}
    table = pd.DataFrame(out.tables["tuning"])
    assert set(table[table["hyper"] == "authors-eo"]["lr_theta"]) == {0.005}
    assert table.groupby("hyper")["chosen"].sum().to_dict() == {"authors-eo": 1, "tuned": 1}
    ds = _synthetic()
    for row in out.tables["privacy"]:
        assert row["max_row_norm"] == pytest.approx(float(np.sqrt((ds.X**2).sum(axis=1).max() + 1)), rel=0.5)
        assert 0 < row["label_rows"] < 256 and 0 < row["p_group"] < 1 and row["lambda_max"] == 1.0
        assert 0 < row["error_all_negative"] < 1
        assert 0 < row["eps_data_theta_rdp"] <= row["eps_data_joint_rdp"]


def _fig9_bundle(summary: pd.DataFrame):
    from types import SimpleNamespace

    spec = load_experiment(EXPERIMENTS / "dpfermi-fig-9.toml")
    trials = pd.DataFrame([{"method": "dp-fermi", "epsilon": 0.5, "knob": lam, "hyper": h, "data": "authors",
                            "error": 0.17 + 0.1 * lam, "violation": 0.2 - 0.3 * lam, "error_nonprivate": 0.16,
                            "clip_L": 1.0, "radius_D": 1.0, "lr_theta": 0.005}
                           for lam in (0.0, 0.25, 0.5) for h in ("authors-eo", "tuned")])
    privacy = pd.DataFrame([{"method": "dp-fermi", "data": "authors", "hyper": "authors-eo", "epsilon": 0.5,
                             "error_all_negative": 0.2381, "eps_data_joint_rdp": 1.7}])
    return SimpleNamespace(spec=spec, trials=trials, summary=summary, table=lambda name, default=None: privacy,
                           variant="reference", profile="full", directory=Path("/nonexistent/full"))


def test_report_lists_errata_and_the_verdict_covers_only_producible_points() -> None:
    """Issue 22 item 2: released points flagged by the errata check are listed as not reproducible by the
    released code and left out of the verdict; only the primary setting (`authors-eo`) is judged."""
    rows = [("dp-fermi", "authors-eo", 0.0, True),
            ("dp-fermi", "authors-eo", 0.5, False),   # erratum point
            ("dp-fermi", "tuned", 0.0, False),        # ablation
            ("pf-ld", None, None, True)]
    summary = pd.DataFrame([{"method": m, "setting": "", "metric": "error", "within": w, "data": "authors",
                             "epsilon": 0.5, "knob": k, "hyper": h} for m, h, k, w in rows])
    bundle = _fig9_bundle(summary)
    assert report.primary_hyper(bundle) == "authors-eo"
    errata = report.released_errata(bundle)
    bad = errata[errata["not_reproducible"]]
    fermi_bad = bad[bad["method"] == "dp-fermi"]
    assert sorted(set(fermi_bad["knob"].astype(float))) == [0.375, 0.5]
    assert "near-trivial" in ";".join(errata[errata["knob"].astype(float) == 0.5]["reasons"])  # from error_all_negative
    text = report.fidelity_verdict(bundle)
    assert text.startswith("2 of 2 within tolerance (DP-FERMI `authors-eo`)")
    assert "1 comparisons with released points not reproducible" in text
    md = report.report_markdown(bundle)
    assert "not reproducible by the released code, reason: impossible-band" in md
    assert "cover only the points the code can produce" in md
    assert "eps_data_joint_rdp" in md
    from repro.engine.report import _verdict_text

    assert _verdict_text(bundle).startswith("2 of 2 within tolerance (DP-FERMI `authors-eo`)")  # the run's Verdict line
    assert _verdict_text(bundle).endswith("[all rows of the table: 2 of 4]")


def test_report_states_the_privacy_unit_and_the_joint_release() -> None:
    """The privacy paragraph says what one ε covers, from the table's own columns; nothing for older tables."""
    priv = pd.DataFrame([{"method": "dp-fermi", "data": "authors", "epsilon": 1.0, "joint_release": SHARED_NOISE,
                          "rows_per_person": 2, "privacy_unit": "2 rows per person (test)"},
                         {"method": "dp-fermi", "data": "clean", "epsilon": 1.0, "joint_release": SHARED_NOISE,
                          "rows_per_person": 1, "privacy_unit": "one row per person"}])
    text = report._unit_sentence(priv)
    assert SHARED_NOISE in text and "`authors` data" in text and "2 rows per person (test)" in text
    assert "`clean` data" not in text and "vacuous" not in text
    assert "vacuous" in report._unit_sentence(priv.assign(rows_per_person=168))
    assert report._unit_sentence(pd.DataFrame([{"method": "dp-fermi", "epsilon": 1.0}])) == ""
