"""``fit_path``: every estimator with a path parameter (found by scanning :mod:`repro.estimators`, no list kept
here) fits its grid in one run (the studies' knob grids train through it). Where the path shares its draws, the
i-th model is the one ``fit`` gives at that value from the same generator state, to 1e-12; where it does not
(Tran et al.'s γ models and Jagielski et al.'s games each draw their own noise), ``fit`` is the path of its one value and the values'
models differ."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from sklearn.base import clone

import repro.estimators as estimators
from repro.errors import InvalidParameterError

#: small settings per estimator (hyperparameters that keep a fit to a fraction of a second), and two path values
SMALL = {"epochs": 2, "batch_size": 32, "rounds": 2, "learner_epochs": 1}
PATHS = {"gamma": [0.0, 2.0], "lam": [0.0, 1.5], "bound": [0.0, 10.0]}

WITH_PATH = {name: cls for name, cls in inspect.getmembers(estimators, inspect.isclass)
             if getattr(cls, "path_param", None) is not None}


def _data(n: int = 120):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(n, 3))
    s = (rng.random(n) < 0.4).astype(int)
    y = (X[:, 0] + 0.5 * s + 0.5 * rng.normal(size=n) > 0).astype(int)
    return X, y, s


def _outputs(est, X, s) -> list[np.ndarray]:
    return [np.asarray(est.predict_proba(X, sensitive_features=s)), *(np.asarray(getattr(est, a))
            for a in ("coef_", "intercept_") if hasattr(est, a))]


def test_the_scan_finds_the_path_estimators() -> None:
    assert {"Tran2021aClassifier", "DPFermiClassifier", "Jagielski2019Classifier"} <= set(WITH_PATH)
    assert WITH_PATH["DPFermiClassifier"].path_shares_draws       # the λ grid: one noise draw for every λ
    assert all(cls.path_param in PATHS for cls in WITH_PATH.values())


@pytest.mark.parametrize("name", sorted(WITH_PATH))
def test_fit_path_is_fit_at_each_value_from_the_same_generator_state(name: str) -> None:
    cls = WITH_PATH[name]
    X, y, s = _data()
    base = cls(**{k: v for k, v in {**SMALL, "epsilon": 2.0}.items() if k in cls().get_params()})
    values = PATHS[cls.path_param]
    path = clone(base).set_params(random_state=np.random.default_rng(11)).fit_path(X, y, values, sensitive_features=s)
    assert [est.get_params()[cls.path_param] for est in path] == values
    if not cls.path_shares_draws:
        one = clone(base).set_params(random_state=np.random.default_rng(11)).fit_path(X, y, values[:1],
                                                                                      sensitive_features=s)[0]
        assert not np.allclose(path[0].predict_proba(X, sensitive_features=s),
                               path[1].predict_proba(X, sensitive_features=s))
        path, values = [one], values[:1]
    for value, est in zip(values, path, strict=True):
        alone = clone(base).set_params(**{cls.path_param: value}, random_state=np.random.default_rng(11))
        alone.fit(X, y, sensitive_features=s)
        for a, b in zip(_outputs(est, X, s), _outputs(alone, X, s), strict=True):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
        assert est.privacy_guarantee_ == alone.privacy_guarantee_


def test_fit_path_needs_a_path_and_values() -> None:
    X, y, s = _data()
    with pytest.raises(InvalidParameterError, match="no path parameter"):
        estimators.PFLDClassifier().fit_path(X, y, [1.0], sensitive_features=s)
    with pytest.raises(InvalidParameterError, match="at least one value"):
        estimators.Tran2021aClassifier().fit_path(X, y, [], sensitive_features=s)
