"""The estimators refuse inputs a fit cannot use, with scikit-learn-style messages naming the parameter:
NaN in ``sensitive_features`` (was an internal "rho (group floor)" error), ``epsilon=1e308`` (a raw
OverflowError or a bracketing failure of the accountant) and ``epsilon='1'`` (a string, accepted)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import repro.estimators as estimators
from repro.estimators._base import EPSILON_MAX

PRIVATE = ["DPFermiClassifier", "DPSGDLogisticClassifier", "Jagielski2019Classifier", "Tran2021aClassifier",
           "PFLDClassifier", "LDPLightGBMClassifier"]


def _data(n: int = 120) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    return X, (X[:, 0] > 0).astype(int), rng.integers(0, 2, n)


@pytest.mark.parametrize("name", PRIVATE)
@pytest.mark.parametrize("epsilon", ["1", 1e308, 1e3, True])
def test_epsilon_outside_its_range_is_named(name: str, epsilon: object) -> None:
    X, y, s = _data()
    est = getattr(estimators, name)(epsilon=epsilon)
    with pytest.raises(ValueError, match=rf"^The 'epsilon' parameter of {name} must be a float in the range "
                                         rf"\(0, {EPSILON_MAX:g}\] or math.inf \(no noise\)\. Got .* instead\.$"):
        est.fit(X, y, sensitive_features=s)


@pytest.mark.parametrize("name", ["DPFermiClassifier", "PFLDClassifier", "LDPLightGBMClassifier"])
def test_nan_in_sensitive_features_is_named(name: str) -> None:
    X, y, s = _data()
    s = s.astype(float)
    s[3] = math.nan
    with pytest.raises(ValueError, match=r"^Input sensitive_features contains NaN \(1 of 120 rows\)"):
        getattr(estimators, name)(epsilon=1.0).fit(X, y, sensitive_features=s)
    groups = np.array(["a", None] * 60, dtype=object)
    with pytest.raises(ValueError, match="contains NaN"):
        getattr(estimators, name)(epsilon=1.0).fit(X, y, sensitive_features=groups)


def test_one_group_is_still_refused() -> None:
    X, y, _ = _data()
    with pytest.raises(ValueError, match="at least 2 groups"):
        estimators.PFLDClassifier(epsilon=1.0).fit(X, y, sensitive_features=np.zeros(len(X)))
