"""The thesis Part I study: records and provenance. Needs the data mirror."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from repro.engine.runner import RunConfig, run_experiment
from repro.engine.spec import load_experiment

pytestmark = pytest.mark.data
EXPERIMENTS = Path(__file__).parents[3] / "experiments"


@pytest.fixture
def env(data_mirror: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REPRO_DATA_MIRROR", str(data_mirror))
    monkeypatch.setenv("REPRO_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("REPRO_OFFLINE", "1")
    return tmp_path


def test_records_carry_the_accounted_epsilon_and_the_data_source(env: Path) -> None:
    # --jobs 1 = --jobs 2 for this experiment is checked byte for byte by its smoke test
    # (tests/experiments/test_every_experiment_smoke.py, repro._testing.identity)
    spec = load_experiment(EXPERIMENTS / "thesis-table-3.3.toml")
    runs = [run_experiment(spec, RunConfig(profile="smoke", seeds=1, jobs=1, out=env / "out1", use_cache=False))]
    t = runs[0].trials
    alg2 = t[t["method"] == "Algorithm 2"].iloc[0]
    # the accountant's ε of the calibrated DP-SGD part meets ε′ − ε₀ − ε₁ = 2.8 and is recorded
    assert 2.8 * 0.99 <= alg2["eps_dpsgd"] <= 2.8 + 1e-9
    assert alg2["eps_total"] == pytest.approx(alg2["eps_dpsgd"] + 0.2)
    assert set(t["method"]) >= {"Algorithm 2", "DP-SGD (before post-processing)", "DP-FERMI"}
    data = runs[0].tables["data"].iloc[0]
    assert data["source"] in {"credit-card-xls", "credit-card-tsv"}
    assert data["rows_per_person"] == 1 and data["privacy_unit"] == "one row per person"   # a row is a person


def test_every_method_reads_its_declared_guarantee() -> None:
    # issue 14 defect 3, issue 20 item 4, issue 21: DP-SGD and Algorithm 2 are accounted but see features
    # standardised with the training rows' statistics (and Algorithm 2 uses the group sizes): public-statistics
    # caveat; the thesis DP-FERMI formulas are nominal; strict (all features) treats P-hat_S as public.
    from repro.fairness.private_postprocessing import guarantee as alg2
    from repro.learners.dp_fermi import REFERENCE, STRICT_ALL_FEATURES
    from repro.learners.dp_fermi import guarantee as fermi
    from repro.learners.dp_sgd import guarantee as dp_sgd
    from repro.privacy.guarantee import Label, compose
    from repro.studies.thesis import part1_tables as pt

    assert not hasattr(pt, "EPS_LABEL")
    assert dp_sgd(1.0, 1e-5).label is Label.PUBLIC_STATISTICS and "standardised" in dp_sgd(1.0, 1e-5).caveat
    both = compose(dp_sgd(1.0, 1e-5), alg2(0.05, 0.1))
    assert both.label is Label.PUBLIC_STATISTICS and both.epsilon == pytest.approx(1.15)
    assert "group sizes" in both.caveat and "standardised" in both.caveat
    assert fermi(REFERENCE, 1.0, 1e-5).label is Label.NOMINAL
    assert fermi(STRICT_ALL_FEATURES, 1.0, 1e-5).label is Label.PUBLIC_STATISTICS


def test_every_method_declares_its_guarantee() -> None:
    # issue 14, defect 3, issue 21: DP-SGD + Algorithm 2 public-statistics caveat, thesis DP-FERMI formulas nominal, strict P-hat_S public.
    from repro.privacy.guarantee import Guarantee
    from repro.studies.thesis import methods

    found = methods.methods()
    assert list(found) == ["DP-FERMI", "DP-FERMI (other group order)", "DP-FERMI (strict)", "Algorithm 2"]
    labels = {name: m.label() for name, m in found.items()}
    assert all(isinstance(m.guarantee_for(), Guarantee) for m in found.values())
    assert labels == {"Algorithm 2": "public-statistics caveat", "DP-FERMI": "nominal",
                      "DP-FERMI (other group order)": "nominal",
                      "DP-FERMI (strict)": "public-statistics caveat"}
    assert found["Algorithm 2"].record_names == ("DP-SGD (before post-processing)", "Algorithm 2")


def test_thesis_dp_fermi_rows_declare_the_relation_their_noise_is_calibrated_for() -> None:
    # The thesis's DP-FERMI rows use its all-feature noise formulas (privacy w.r.t. a whole record), not
    # Theorem 3.3(a)'s sensitive-attribute relation that the figures' engine declares for its code path.
    from repro.privacy.guarantee import Neighbouring
    from repro.studies.thesis import methods

    found = methods.methods()
    for name in ("DP-FERMI", "DP-FERMI (other group order)"):
        declared = found[name].guarantee_for()
        assert declared.relation is Neighbouring.REPLACE_ONE, name
        assert "all-feature" in declared.accountant and "Theorem 3.3" not in declared.accountant
    assert found["DP-FERMI (strict)"].guarantee_for().relation is Neighbouring.ADD_OR_REMOVE_ONE



def test_authors_adult_split_re_derives_the_thesis_accountant_inputs(env: Path) -> None:
    """Issue 13 fact 1 / spec P4: on the authors' Adult file Algorithm 2 fits on int(2/3 · 45,243) = 30,162 rows,
    so Opacus samples q = 1/30 (thesis: 1024/30,162 ≈ 0.034) for T = 30 · 50 = 1,500 steps: the thesis's inputs."""
    from repro.engine.spec import get_experiment
    from repro.engine.trial import TrialContext, TrialKey
    from repro.privacy.accounting import opacus_sampling
    from repro.studies.thesis.part1_tables import prepare, split_stream

    ctx = TrialContext(TrialKey.of("thesis-table-3.1", scopes=get_experiment("thesis-table-3.1").scopes))
    stream = split_stream(ctx, "adult", "fixed", 0)
    ds, sp, X = prepare("adult", stream, 0, "authors")
    assert ds.name == "adult-authors" and ds.n == 60_324
    assert (sp.full_train.size, sp.train.size, sp.post.size, sp.test.size) == (45_243, 30_162, 15_081, 15_081)
    assert set(sp.train) | set(sp.post) == set(sp.full_train) and not set(sp.full_train) & set(sp.test)
    q, steps = opacus_sampling(sp.train.size, 1024, 50)
    assert (q, steps) == (1 / 30, 1500) and abs(1024 / sp.train.size - 0.034) < 0.0005
    clean = prepare("adult", stream, 0, "clean")[1]
    assert clean.train.size == 22_610                            # the clean reading of the same rule
    # standardized with the authors' training part only
    np.testing.assert_allclose(X[sp.full_train][:, list(ds.numeric_columns)].mean(axis=0), 0, atol=1e-9)
