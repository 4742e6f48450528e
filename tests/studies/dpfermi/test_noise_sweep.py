"""dpfermi-noise-sweep: every (L, D) × λ × η_θ in one trial; σ_θ ∝ L·D; the report's closest-L·D inference."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import repro.studies.dpfermi.noise_sweep as study
import repro.studies.dpfermi.noise_sweep_report as report
from repro.datasets.tabular import TabularDataset
from repro.engine.spec import load_experiment
from repro.engine.spec import load_experiment as _load
from repro.engine.trial import TrialContext, TrialKey

#: the experiment file's [params]: the one source of the study's defaults
FILE_PARAMS = {**_load(Path(__file__).parents[3] / "experiments" / "dpfermi-noise-sweep.toml").params, "variant": "reference"}

EXPERIMENTS = Path(__file__).parents[3] / "experiments"


def _synthetic(n: int = 1600) -> TabularDataset:
    rng = np.random.default_rng(0)
    s = (rng.random(n) < 0.4).astype(np.int8)
    X = rng.normal(size=(n, 4)) + s[:, None] * 0.7
    y = (rng.random(n) < 1 / (1 + np.exp(-(X[:, 0] - 0.5)))).astype(np.int8)
    return TabularDataset(name="synthetic", X=X, y=y, s=s, feature_names=tuple("abcd"), numeric_columns=(0, 1, 2, 3),
                          group_names=("g0", "g1"), description="test", source="synthetic")


def _params(**kw) -> dict:
    return FILE_PARAMS | dict(dataset="synthetic", data="clean", fairness="dp", epsilon=1.0, epochs=2, batch_size=256,
                clip_radius_pairs=[[1.0, 1.0], [1.0, 5.0], [5.0, 5.0]], lambdas=[0.0, 0.5],
                lr_thetas=[0.005, 0.01]) | kw


def test_one_trial_trains_every_configuration(monkeypatch) -> None:
    monkeypatch.setattr(study, "load_dataset", lambda name, data="clean": _synthetic())
    out = study.run_trial(_params(), TrialContext(TrialKey.of("t", {"method": "dp-fermi"})))
    df = pd.DataFrame(out.records)
    assert len(df) == 3 * 2 * 2 and set(df["LD"]) == {1.0, 5.0, 25.0}
    sig = df.groupby("LD")["sigma_theta"].first()
    np.testing.assert_allclose(sig / sig[1.0], [1.0, 5.0, 25.0])     # Theorem 3.3(a): σ_θ ∝ L·D
    assert df["error"].between(0, 1).all() and (df["eps_label"] == "nominal").all()
    with pytest.raises(Exception, match="clip_radius_pairs"):
        study.run_trial(_params(clip_radius_pairs=[[1.0]]), TrialContext(TrialKey.of("t", {"method": "dp-fermi"})))


def test_closest_noise_level_is_read_from_the_released_lambda_zero_error() -> None:
    spec = load_experiment(EXPERIMENTS / "dpfermi-noise-sweep.toml")
    rel = {(r.setting["dataset"], r.setting["fairness"], r.setting["epsilon"]): r.value for r in spec.references}
    assert rel[("adult", "dp", 1.0)] == 0.1585 and len(rel) == 14
    rows = [{"dataset": "adult", "fairness": "dp", "epsilon": 1.0, "lr_theta": 0.01, "knob": 0.0, "LD": ld,
             "error": e, "violation": 0.1, "repetition": 0}
            for ld, e in ((1.0, 0.157), (5.0, 0.165), (25.0, 0.21))]
    bundle = type("B", (), {"spec": spec, "trials": pd.DataFrame(rows)})()
    t = report.closest_noise_levels(bundle)
    assert t.iloc[0]["closest L·D"] == 1.0 and t.iloc[0]["|gap|"] == pytest.approx(0.0015)
    assert "INFERENCE" in report.report_markdown(bundle)
