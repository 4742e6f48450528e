"""Every learner unit, found by scanning :mod:`repro.learners` for ``UNIT`` declarations, meets the one contract
(:class:`repro.learners.unit.Unit`): a new unit is checked here with no test edit.

- ``fit`` at a budget equals ``fit_many`` of that one trial with the same generator (to 1e-12);
- the ``Configured`` it returns: its event is the unit's ``event(config, n)``; its ε at its δ is the claimed ε
  (the guarantee's) up to the calibration's tolerance (the claim is the target, the accountant's ε of the
  calibrated noise lies at most 3 % below it, never above it by more than the strict accountant's root-finding
  tolerance, 1e-9 relative); a noise-multiplier deviation keeps the claim and
  raises the ε when it lowers the noise;
- the estimator built over the unit (``repro.estimators``: ``_unit``) gives the unit's model with the same
  generator, is one of the estimators scikit-learn's ``check_estimator`` runs on
  (``tests/estimators/test_sklearn_checks.py``), and is a ``repro run --with`` method as it stands.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

import numpy as np
import pytest

import repro.estimators as estimators
import repro.learners
from repro.engine.user_method import load_user_method
from repro.learners.unit import Configured, Unit
from repro.studies.methods import fit_user_method


def _units() -> dict[str, Unit]:
    found = {}
    for info in pkgutil.walk_packages(repro.learners.__path__, "repro.learners."):
        unit = getattr(importlib.import_module(info.name), "UNIT", None)
        if isinstance(unit, Unit):
            found[info.name] = unit
    return found


UNITS = _units()


def _params(result) -> list[np.ndarray]:
    """Every array of a fitted result (a model, a DP-FERMI result, a tuple of models, a CNN result)."""
    if isinstance(result, tuple):
        return [a for r in result for a in _params(r)]
    model = getattr(result, "model", result)
    if hasattr(result, "params"):            # the CNN: its parameter tree
        import jax

        return [np.asarray(a) for a in jax.tree_util.tree_leaves(result.params)]
    return [np.asarray(model.w), np.atleast_1d(np.asarray(model.b))]


def test_the_scan_finds_every_unit() -> None:
    assert {"repro.learners.dp_fermi_unit", "repro.learners.dp_sgd_unit", "repro.learners.baselines.dpsgd_unit",
            "repro.learners.dp_fermi_cnn_unit"} <= set(UNITS)
    assert len({u.name for u in UNITS.values()}) == len(UNITS)


@pytest.mark.parametrize("module", sorted(UNITS))
def test_fit_is_fit_many_of_one_and_its_configured_holds(module: str) -> None:
    unit = UNITS[module]
    X, y, s, kwargs = unit.example(np.random.default_rng(0))
    result, c = unit.fit(X, y, s, rng=np.random.default_rng(7), **kwargs)
    assert isinstance(c, Configured)
    again = unit.fit_one(X, y, s, c, np.random.default_rng(7))
    for a, b in zip(_params(result), _params(again), strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    # the Configured: its event is the unit's, its ε at its δ is the claim (≤, within the calibration's tolerance)
    assert repr(unit.event(c.config, c.n)) == repr(c.event)
    claimed, accounted = c.guarantee.epsilon, c.epsilon(c.delta)
    assert kwargs["epsilon"] == pytest.approx(claimed, rel=0.03)
    # (the exact strict accountant's root finding lands within 1e-9 relative of the target, either side)
    assert 0.97 * claimed <= accounted <= claimed * (1 + 1e-9)
    assert c.epsilon(c.delta, "rdp") >= accounted * (1 - 1e-6)      # RDP upper-bounds the tight accountant
    broken = c.with_noise_multiplier(c.noise_multiplier / 2)
    assert broken.guarantee == c.guarantee and broken.deviation and broken.epsilon(c.delta) > 1.5 * accounted


def _estimators_over(module: str) -> list[type]:
    return [cls for _, cls in inspect.getmembers(estimators, inspect.isclass)
            if getattr(getattr(cls, "_unit", None), "__name__", None) == module]


@pytest.mark.parametrize("module", sorted(UNITS))
def test_the_estimator_over_a_unit_is_the_units_fit(module: str) -> None:
    """The estimator declaring ``_unit = <this module>`` trains the unit's own fit: with the example's budget and
    hyperparameters (its parameters of the same names) and the same generator, the same model and the same
    Configured. Every such estimator is one that scikit-learn's checks run on."""
    classes = _estimators_over(module)
    if not classes:
        pytest.skip(f"{module} has no scikit-learn estimator (the CNN trains on images, not a table)")
    checked = (Path(__file__).parents[1] / "estimators" / "test_sklearn_checks.py").read_text(encoding="utf-8")
    unit = UNITS[module]
    X, y, s, kwargs = unit.example(np.random.default_rng(0))
    for cls in classes:
        assert f"    {cls.__name__}," in checked        # imported there, so parametrize_with_checks runs on it
        est = cls(**{k: v for k, v in kwargs.items() if k in cls().get_params()},
                  random_state=np.random.default_rng(7))
        try:
            est.fit(X, y)                               # DP-SGD: the features as given
        except ValueError:
            est.fit(X, y, sensitive_features=s)         # a fair estimator needs the groups
        result, c = unit.fit(X, y, s, rng=np.random.default_rng(7), **kwargs)
        np.testing.assert_allclose(est.coef_.ravel(), _params(result)[0], rtol=0, atol=1e-12)
        assert repr(est.configured_.event) == repr(c.event) and est.configured_.guarantee == c.guarantee
        # one that declares its claim on the class is a `--with` method as it stands (a researcher's contract;
        # DP-SGD does not: given the groups it trains on [X, s], so its predict needs them too)
        if "privacy_guarantee" not in vars(cls):
            continue
        method = load_user_method(f"{cls.__module__}:{cls.__name__}")
        assert method.cls is cls and method.guarantee == cls.privacy_guarantee
        _, pred, claim = fit_user_method(method.key, X, y, s, X[:10], rng=np.random.default_rng(3), epsilon=1.0,
                                         delta=1e-3)
        assert pred.shape == (10,) and claim.label.value == "declared by the user" and claim.epsilon == 1.0
