"""The user-method contract (repro.engine.user_method) without data: loading, the plan's extra cell, and its fit
(repro.studies.methods.fit_user_method: the declared methods' Learner)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from repro.engine.spec import format_setting, load_experiment
from repro.engine.user_method import USER_KEY, load_user_method, with_user_method
from repro.errors import InvalidParameterError
from repro.privacy.guarantee import Label, Neighbouring
from repro.studies.methods import fit_user_method

ROOT = Path(__file__).parents[2]
EXAMPLE = ROOT / "examples" / "my_method.py"


def test_example_loads_with_its_code_hash() -> None:
    import hashlib

    m = load_user_method(str(EXAMPLE))
    assert m.name == "OutputPerturbationLogisticRegression (yours)"
    assert m.key == "OutputPerturbationLogisticRegression@" + hashlib.sha256(EXAMPLE.read_bytes()).hexdigest()
    assert m.guarantee.relation is Neighbouring.REPLACE_ONE


def test_identity_is_the_code_hash_and_class_never_the_files_path(tmp_path, monkeypatch) -> None:
    """Issue 24 follow-up: the cell's ``with`` value (cache key, trials.csv) is ``Class@sha256``; a moved file is the
    same method, outputs show the path relative to the current directory, and a worker that never loaded the
    file finds the hashed code by its identity."""
    import shutil

    import repro.engine.user_method as um

    monkeypatch.setenv("REPRO_USER_METHOD_STORE", str(tmp_path / "store"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a").mkdir()
    (tmp_path / "b" / "deeper").mkdir(parents=True)
    shutil.copy(EXAMPLE, tmp_path / "a" / "mine.py")
    shutil.copy(EXAMPLE, tmp_path / "b" / "deeper" / "moved.py")
    first = load_user_method(str(tmp_path / "a" / "mine.py"))
    moved = load_user_method("b/deeper/moved.py:OutputPerturbationLogisticRegression")
    assert first.key == moved.key and str(tmp_path) not in first.key
    outside = tmp_path / "outside.py"
    shutil.copy(EXAMPLE, outside)
    monkeypatch.chdir(tmp_path / "a")
    assert load_user_method(str(outside)).ref == "outside.py:OutputPerturbationLogisticRegression"  # no ../ path
    monkeypatch.chdir(tmp_path)
    assert (first.ref, moved.ref) == ("a/mine.py:OutputPerturbationLogisticRegression",
                                      "b/deeper/moved.py:OutputPerturbationLogisticRegression")
    spec = with_user_method(load_experiment(ROOT / "experiments" / "thesis-table-3.1.toml"), first)
    assert {c[USER_KEY] for c in spec.expand_cells("smoke") if USER_KEY in c} == {first.key}
    # a fresh worker: nothing loaded in-process, the original file gone
    monkeypatch.setattr(um, "_LOADED", {})
    um.resolve.cache_clear()
    shutil.rmtree(tmp_path / "a")
    shutil.rmtree(tmp_path / "b")
    again = um.resolve(first.key)
    assert again.key == first.key and again.cls.__name__ == "OutputPerturbationLogisticRegression"
    um.resolve.cache_clear()
    with pytest.raises(InvalidParameterError, match="no loaded method"):
        um.resolve("Other@" + "0" * 64)


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
        assert all(c[USER_KEY] == m.key for c in mine)
        others = {format_setting(c) for c in before}
        assert {format_setting(c) for c in mine} <= others  # same settings (and seeds) as the paper's
        if n_methods:
            assert len(before) == n_methods * len(mine)


def test_fit_user_method_passes_the_budget_and_relabels_the_guarantee() -> None:
    m = load_user_method(str(EXAMPLE))
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 3))
    y = (X[:, 0] > 0).astype(int)
    s = rng.integers(0, 2, 400)
    _, pred, g = fit_user_method(m.key, X, y, s, X, rng=np.random.default_rng(7), epsilon=50.0, delta=1e-5)
    _, pred2, _ = fit_user_method(m.key, X, y, s, X, rng=np.random.default_rng(7), epsilon=50.0, delta=1e-5)
    np.testing.assert_array_equal(pred, pred2)  # the int random_state drawn from the generator: reproducible
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
    assert m.name == "LabMethod (yours)" and m.ref == "my_lab_methods:LabMethod" and m.key.startswith("LabMethod@")
    with pytest.raises(InvalidParameterError, match="expected FILE.py"):
        load_user_method(":Cls")
