"""Pieces of the Figures 5.1–5.10 pipeline: the stratified split, the training-attribute encodings and
the trend verdicts of the report (on synthetic results with known answers).

Spec: ../shared/specs/seed-003-thesis.md §6.1, §7 ("Claimed trends"), L6.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from repro.engine.spec import experiments_dir, load_experiment
from repro.errors import InvalidParameterError
from repro.privacy.ldp_mechanisms import ss_subset_size
from repro.studies.thesis.ldp_figures import mechanism_output, stratified_split
from repro.studies.thesis.ldp_figures_report import trend_checks


def test_stratified_split_is_a_stratified_partition() -> None:
    y = np.array([0] * 300 + [1] * 700)
    train, test = stratified_split(y, test_size=0.2, subsample=1.0, rng=np.random.default_rng(0))
    assert np.intersect1d(train, test).size == 0
    assert np.union1d(train, test).size == 1000
    assert test.size == 200 and y[test].sum() == 140
    tr, te = stratified_split(y, test_size=0.2, subsample=0.5, rng=np.random.default_rng(0))
    assert tr.size + te.size == 500 and y[np.concatenate([tr, te])].mean() == pytest.approx(0.7)
    with pytest.raises(InvalidParameterError):
        stratified_split(y, test_size=1.2, subsample=1.0, rng=np.random.default_rng(0))


def test_mechanism_output_encodings() -> None:
    rng = np.random.default_rng(1)
    a = rng.integers(0, 5, 1000)
    enc, z = mechanism_output("non-private", a, 5, float("nan"), opt_matrix=None, rng=rng)
    assert np.array_equal(enc.argmax(axis=1), a) and np.array_equal(z, a)
    enc, z = mechanism_output("SS", a, 5, 0.05, opt_matrix=None, rng=rng)
    assert z is None and np.all(enc.sum(axis=1) == ss_subset_size(5, 0.05)) and ss_subset_size(5, 0.05) == 2
    enc, z = mechanism_output("GRR", a, 5, 1.0, opt_matrix=None, rng=rng)
    assert np.all(enc.sum(axis=1) == 1) and np.array_equal(enc.argmax(axis=1), z)
    with pytest.raises(InvalidParameterError, match="matrix"):
        mechanism_output("OPT", a, 5, 1.0, opt_matrix=None, rng=rng)
    with pytest.raises(InvalidParameterError, match="method"):
        mechanism_output("XYZ", a, 5, 1.0, opt_matrix=None, rng=rng)


#: the experiment whose [[claims]] judge a (dataset, k) in these tests
_EXPERIMENT = {("lsac", 2): "thesis-fig-5.3", ("adult", 2): "thesis-fig-5.1"}


def _summary(trials: pd.DataFrame) -> pd.DataFrame:
    """The summary's shape as far as claims read it: one row per (method, ε, metric) with its mean."""
    if trials.empty:
        return pd.DataFrame(columns=["method", "metric", "mean", "epsilon"])
    metrics = [m for m in ("accuracy", "f1", "sp_gap", "eo_gap") if m in trials]
    mean = trials.groupby(["method", "epsilon"], dropna=False)[metrics].mean().reset_index()
    return mean.melt(id_vars=["method", "epsilon"], var_name="metric", value_name="mean")


def _bundle(rows: list[dict], dataset: str, k: int) -> SimpleNamespace:
    trials = pd.DataFrame(rows)
    params = {"dataset": dataset, "attribute": "gender" if k == 2 else "race", "k": k, "figures": ["a", "b"]}
    spec = load_experiment(experiments_dir() / f"{_EXPERIMENT.get((dataset, k), 'thesis-fig-5.5')}.toml")
    return SimpleNamespace(trials=trials, summary=_summary(trials), run={"params": params}, profile="full",
                           variant="reference", spec=SimpleNamespace(params=params, claims=spec.claims))


def _rows(values: dict, seeds: int = 4) -> list[dict]:
    rows = []
    for (method, eps), (acc, sp) in values.items():
        for r in range(seeds):
            jitter = 1e-4 * (r - 1.5)
            rows.append({"method": method, "epsilon": eps, "repetition": r, "accuracy": acc + jitter,
                         "f1": acc + jitter, "sp_gap": sp + jitter, "eo_gap": sp + jitter})
    return rows


def test_trend_checks_binary_known_answers() -> None:
    vals = {("non-private", np.nan): (0.80, 0.30)}
    for e, opt_sp, grr_sp in ((0.5, 0.28, 0.29), (4.0, 0.20, 0.30), (8.0, 0.15, 0.30)):
        vals[("OPT", e)] = (0.80, opt_sp)
        vals[("GRR", e)] = (0.80, grr_sp)
        vals[("SS", e)] = (0.80, grr_sp)
    checks = {claim: ok for claim, _, ok in trend_checks(_bundle(_rows(vals), "lsac", 2))}
    assert all(ok for claim, ok in checks.items() if "little to no effect" in claim)
    assert all(ok for claim, ok in checks.items() if "smaller" in claim or "widens" in claim)
    assert all(ok for claim, ok in checks.items() if "almost half" in claim)  # 0.175/0.30 = 0.58
    # make OPT lose at ε = 0.5 and hurt accuracy: those claims must fail
    vals[("OPT", 0.5)] = (0.70, 0.35)
    checks = {claim: ok for claim, _, ok in trend_checks(_bundle(_rows(vals), "lsac", 2))}
    assert not any(ok for claim, ok in checks.items() if "little to no effect" in claim)
    assert not any(ok for claim, ok in checks.items() if "at every ε" in claim and "smaller" in claim)


def test_trend_checks_nonbinary_threshold() -> None:
    vals = {("non-private", np.nan): (0.80, 0.30)}
    for e, opt_sp in ((0.05, 0.200), (1.0, 0.22), (8.0, 0.10)):
        vals[("OPT", e)] = (0.80, opt_sp)
        vals[("GRR", e)] = (0.80, 0.200 if e == 0.05 else 0.30)
        vals[("SS", e)] = (0.801, 0.200 if e == 0.05 else 0.31)
    out = trend_checks(_bundle(_rows(vals), "adult", 5))
    checks = {claim: (vals_, ok) for claim, vals_, ok in out}
    thr = [v for c, v in checks.items() if "beyond a threshold" in c and "SP" in c][0]
    assert thr[1] and "threshold ε = 1" in thr[0]
    assert all(ok for c, (_, ok) in checks.items() if "small ε" in c or "very similar" in c)


def _fake_prepared(n: int, k: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    a = rng.choice(k, size=n, p=np.r_[0.7, np.full(k - 1, 0.3 / (k - 1))])
    y = (rng.random(n) < 0.3 + 0.1 * (a == 0)).astype(np.int64)
    x = np.eye(3, dtype=np.float32)[rng.integers(0, 3, n)]
    from repro.fairness.data_fairness import group_stats

    p, p1, py = group_stats(a, y, k)
    return {"x": x, "a": a, "y": y, "k": k, "p": p, "p1": p1, "py": py, "source": "fake", "features": ["f"]}


@pytest.mark.parametrize("k", [2, 4])
def test_records_carry_each_mechanisms_privacy_label_and_the_report_shows_it(monkeypatch, k: int) -> None:
    """Issue 21: OPT's matrix is built from data (Theorem 14: the training split's minority group; (5.5.9): the
    full table's P(A), P(Y=1|A)), so its ε carries the public-statistics caveat; GRR and SS are accounted. The
    labels come from repro.privacy.ldp_mechanisms.guarantee, are declared VALUES and reach the report."""
    from repro.engine.identity import TrialKey
    from repro.engine.runner import declared_outputs
    from repro.engine.spec import load_experiment
    from repro.engine.trial import TrialContext
    from repro.privacy.ldp_mechanisms import guarantee
    from repro.studies.thesis import ldp_figures, ldp_figures_report

    data = _fake_prepared(600, k)
    monkeypatch.setattr(ldp_figures, "prepared", lambda *args, **kw: data)
    ldp_figures._nonbinary_opt.cache_clear()
    base = dict(dataset="adult", attribute="gender" if k == 2 else "race", data_source="auto", n_estimators=5,
                max_depth=3, learning_rate=0.1, test_size=0.2, subsample=1.0, variant="reference")
    rows = []
    for method, eps in (("non-private", None), ("OPT", 1.0), ("GRR", 1.0), ("SS", 1.0)):
        cell = {"method": method, **({} if eps is None else {"epsilon": eps})}
        out = ldp_figures.run_trial({**base, **cell}, TrialContext(TrialKey.of("thesis-fig-test", cell)))
        rows += [{**r, "epsilon": eps, "repetition": 0} for r in out.records]
    ldp_figures._nonbinary_opt.cache_clear()
    by = {r["method"]: r for r in rows}
    opt = guarantee(1.0, statistics=ldp_figures.OPT_STATISTICS[k == 2])
    assert (by["OPT"]["eps_label"], by["OPT"]["eps_caveat"]) == (opt.label.value, opt.caveat)
    assert by["OPT"]["eps_label"] == "public-statistics caveat"
    assert ("training split's minority group" if k == 2 else "full table") in by["OPT"]["eps_caveat"]
    for m in ("GRR", "SS"):
        assert (by[m]["eps_label"], by[m]["eps_caveat"]) == ("accounted", "")
    assert by["non-private"]["eps_label"] == "non-private"
    spec = load_experiment(Path(__file__).parents[3] / "experiments" / "thesis-fig-5.1.toml")
    outputs = declared_outputs(spec)
    assert {"eps_label", "eps_caveat"} <= set(outputs.values)
    allowed = set(spec.metric_names) | set(outputs.values) | set(base) | {"method", "epsilon", "repetition", "zeta"}
    assert all(set(r) <= allowed for r in rows)
    bundle = _bundle(rows, "adult", k)
    text = "\n".join(ldp_figures_report.privacy_lines(bundle))
    assert f"- OPT: *public-statistics caveat* — {opt.caveat}" in text and "- GRR: *accounted*" in text
    assert "- SS: *accounted*" in text and "- non-private: *non-private*" in text
    assert text in ldp_figures_report.report_markdown(bundle)
    assert "not recorded" in "\n".join(ldp_figures_report.privacy_lines(_bundle(_rows({}), "adult", k)))


def _fixture(k: int, good: bool) -> dict:
    """Tiny results on which every trend claim of a k-group experiment holds (good) or fails (bad)."""
    vals = {("non-private", np.nan): (0.80, 0.30)}
    for i, e in enumerate((0.5, 4.0, 8.0)):
        if k == 2:   # good: OPT fairer, more so as ε grows, distinct from non-private; bad: OPT = non-private, less accurate
            opt = (0.80, (0.28, 0.20, 0.15)[i]) if good else (0.70, 0.30)
            grr = (0.80, (0.29, 0.30, 0.30)[i]) if good else (0.80, 0.30)
            ss = grr
        else:        # good: OPT ≈ GRR at the smallest ε, lower from ε = 4 on; bad: far at ε = 0.5, lower everywhere, SS off
            opt = (0.80, (0.20, 0.22, 0.10)[i]) if good else (0.80, (0.10, 0.11, 0.12)[i])
            grr = (0.80, (0.20, 0.30, 0.30)[i])
            ss = (0.801, (0.20, 0.31, 0.31)[i]) if good else (0.81, (0.20, 0.31, 0.31)[i])
        vals[("OPT", e)], vals[("GRR", e)], vals[("SS", e)] = opt, grr, ss
    return vals


@pytest.mark.parametrize(("dataset", "k"), [("lsac", 2), ("adult", 2), ("adult", 5)])
@pytest.mark.parametrize("good", [True, False])
def test_every_trend_claim_holds_on_a_good_fixture_and_fails_on_a_bad_one(dataset: str, k: int, good: bool) -> None:
    """Each [[claims]] entry of Figures 5.1–5.10 is judged (none left out) and flips with the data."""
    bundle = _bundle(_rows(_fixture(k, good)), dataset, k)
    out = trend_checks(bundle)
    assert len(out) == len(bundle.spec.claims) == (10 if k == 2 else 6)
    assert [ok for _, _, ok in out] == [good] * len(out), [(c, ok) for c, _, ok in out]
