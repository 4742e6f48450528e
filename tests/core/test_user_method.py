"""The user-method contract (repro.engine.user_method) without data: loading, the plan's extra cell, fit_predict."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from repro.engine.spec import format_setting, load_experiment
from repro.engine.user_method import USER_KEY, fit_predict, load_user_method, with_user_method
from repro.errors import InvalidParameterError
from repro.privacy.guarantee import Label, Neighbouring

ROOT = Path(__file__).parents[2]
EXAMPLE = ROOT / "examples" / "my_method.py"


def test_example_loads_with_its_code_hash() -> None:
    import hashlib

    m = load_user_method(str(EXAMPLE))
    assert m.name == "OutputPerturbationLogisticRegression (yours)"
    assert m.ref.endswith("@" + hashlib.sha256(EXAMPLE.read_bytes()).hexdigest())
    assert m.guarantee.relation is Neighbouring.REPLACE_ONE


def test_user_cell_is_crossed_with_the_grid_and_keeps_the_seed_label() -> None:
    m = load_user_method(str(EXAMPLE))
    for file, n_methods in (("dpfermi-fig-2.toml", 3), ("thesis-table-3.1.toml", None)):
        spec = load_experiment(ROOT / "experiments" / file)
        before = spec.expand_cells("smoke")
        after = with_user_method(spec, m).expand_cells("smoke")
        mine = [c for c in after if c["method"] == m.name]
        assert len(after) == len(before) + len(mine) and mine
        key = lambda c: (c["method"], format_setting(c))  # noqa: E731
        assert sorted(map(key, before)) == sorted(key(c) for c in after if c["method"] != m.name)
        assert all(c[USER_KEY] == m.ref for c in mine)
        others = {format_setting(c) for c in before}
        assert {format_setting(c) for c in mine} <= others  # same settings (and seeds) as the paper's
        if n_methods:
            assert len(before) == n_methods * len(mine)


def test_fit_predict_passes_the_budget_and_relabels_the_guarantee() -> None:
    m = load_user_method(str(EXAMPLE))
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 3))
    y = (X[:, 0] > 0).astype(int)
    s = rng.integers(0, 2, 400)
    _, pred, g = fit_predict(m.ref, X, y, s, X, random_state=7, epsilon=50.0, delta=1e-5)
    _, pred2, _ = fit_predict(m.ref, X, y, s, X, random_state=7, epsilon=50.0, delta=1e-5)
    np.testing.assert_array_equal(pred, pred2)  # the int random_state makes it reproducible
    assert (pred == y).mean() > 0.9  # ε = 50: little noise on a separable problem
    assert g.epsilon == 50.0 and g.delta == 0.0 and g.label is Label.USER_DECLARED  # no delta in __init__


def test_output_perturbation_noise_has_the_stated_scale() -> None:
    """The example's noise norm is Gamma(d, 2/(nΛε)): its mean is 2d/(nΛε) (Chaudhuri et al. 2011, Alg. 1)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("example_method", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    X = np.zeros((100, 1))
    y = np.tile([0, 1], 50)
    base = mod.OutputPerturbationLogisticRegression(epsilon=1e9, regularization=0.1, random_state=0).fit(X, y).coef_
    norms = [np.linalg.norm(mod.OutputPerturbationLogisticRegression(epsilon=1.0, regularization=0.1, random_state=r)
                            .fit(X, y).coef_ - base) for r in range(400)]
    expected = 2 * 2 / (100 * 0.1 * 1.0)  # d = 2 (feature + intercept)
    assert np.mean(norms) == pytest.approx(expected, rel=0.1)  # std of the mean ≈ 3.5 % of it


def test_module_class_reference_and_bad_reference(tmp_path, monkeypatch) -> None:
    (tmp_path / "my_lab_methods.py").write_text(EXAMPLE.read_text(encoding="utf-8").replace(
        "class OutputPerturbationLogisticRegression", "class LabMethod"), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    m = load_user_method("my_lab_methods:LabMethod")
    assert m.name == "LabMethod (yours)" and m.ref.startswith("my_lab_methods:LabMethod@")
    with pytest.raises(InvalidParameterError, match="expected FILE.py"):
        load_user_method(":Cls")
