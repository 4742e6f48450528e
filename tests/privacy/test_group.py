"""Group privacy and the joint-release caveat (repro/privacy/group.py)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import special

from repro.privacy.group import (
    ONE_ROW_PER_PERSON,
    SHARED_NOISE,
    group_privacy,
    per_person,
    privacy_unit,
    shared_noise,
)


def _gauss_delta(eps: float, mu: float) -> float:
    """Exact δ(ε) of the Gaussian mechanism whose sensitivity / σ = μ (Balle & Wang 2018, Thm 8)."""
    return float(special.ndtr(-eps / mu + mu / 2) - math.exp(eps) * special.ndtr(-eps / mu - mu / 2))


def test_one_row_is_the_guarantee_itself() -> None:
    assert group_privacy(0.7, 1e-6, 1) == (0.7, 1e-6)
    assert group_privacy(math.inf, 1e-6, 1) == (math.inf, 1e-6)


def test_closed_forms() -> None:
    eps, delta = 0.5, 1e-9
    assert group_privacy(eps, delta, 2) == pytest.approx((1.0, delta * (1 + math.exp(eps))), rel=1e-12)
    assert group_privacy(eps, delta, 3) == pytest.approx((1.5, delta * (1 + math.exp(eps) + math.exp(2 * eps))),
                                                         rel=1e-12)
    assert group_privacy(0.0, delta, 4) == pytest.approx((0.0, 4 * delta))   # ε = 0: k·δ
    assert group_privacy(2.0, 0.0, 5) == (10.0, 0.0)                          # pure DP: k·ε exactly


def test_pure_laplace_group_bound_is_exact() -> None:
    """Laplace with scale b is (1/b)-DP for one row; for k rows the sensitivity is k and the exact ε is k/b,
    which is what group privacy gives: the bound is tight for pure DP."""
    b, k = 2.0, 7
    x = np.linspace(-20, 20, 4001)
    log_ratio = (np.abs(x - k) - np.abs(x)) / b          # log density ratio of Lap(0, b) vs Lap(k, b)
    assert np.max(np.abs(log_ratio)) == pytest.approx(group_privacy(1 / b, 0.0, k)[0], rel=1e-12)


@pytest.mark.parametrize("mu", [0.05, 0.3, 1.0])
@pytest.mark.parametrize("k", [2, 3, 10])
def test_bound_dominates_the_exact_gaussian_accountant(mu: float, k: int) -> None:
    """For the Gaussian mechanism, neighbours k rows apart have ratio k·μ; its exact δ at the group ε must not
    exceed the group-privacy δ built from the one-row exact δ (fails if the Σ e^{iε} factor is dropped)."""
    for eps in (0.1, 0.5, 1.0, 2.0):
        delta1 = _gauss_delta(eps, mu)
        eps_k, delta_k = group_privacy(eps, delta1, k)
        assert _gauss_delta(eps_k, k * mu) <= delta_k * (1 + 1e-9) + 1e-300


def test_dropping_the_sum_would_be_refuted() -> None:
    """The naive (kε, δ) is not a valid group bound for the Gaussian mechanism: the test above can fail."""
    mu, eps, k = 1.0, 1.0, 3
    delta1 = _gauss_delta(eps, mu)
    assert _gauss_delta(k * eps, k * mu) > delta1


def test_large_groups_are_vacuous_not_an_error() -> None:
    eps_k, delta_k = group_privacy(9.0, 1e-10, 168)
    assert eps_k == pytest.approx(1512.0) and math.isinf(delta_k)
    assert group_privacy(1.0, 1e-10, 168)[1] > 1                              # δ_k above 1: no guarantee


@pytest.mark.parametrize("bad", [(1.0, 1e-5, 0), (1.0, 1e-5, 1.5), (-1.0, 1e-5, 2), (1.0, -1e-5, 2)])
def test_rejects_bad_input(bad: tuple) -> None:
    with pytest.raises(ValueError):
        group_privacy(*bad)


def test_per_person_columns() -> None:
    two = SimpleNamespace(extra={"rows_per_person": 2, "privacy_unit": "two rows per person"})
    cols = per_person(1.0, 1e-10, two)
    assert cols == {"rows_per_person": 2, "eps_per_person": 2.0,
                    "delta_per_person": pytest.approx(1e-10 * (1 + math.e)), "privacy_unit": "two rows per person"}
    assert privacy_unit(SimpleNamespace(extra={})) == ONE_ROW_PER_PERSON == (1, "one row per person")
    assert per_person(1.0, 1e-10, SimpleNamespace(extra={}))["eps_per_person"] == 1.0
    assert "not covered" in SHARED_NOISE and "per model" in SHARED_NOISE


def test_one_wording_of_the_joint_release_caveat_for_both_engines() -> None:
    """DP-FERMI's models and Private-Fair-Greedy's configurations share noise in the same way; the caveat is
    worded once (``shared_noise``), so both state the unit ε is per and that a joint release has none."""
    from repro.studies.pfg.regret_and_sweeps import JOINT_RELEASE

    tail = ", so a release of several of them is not covered by ε"
    assert shared_noise("x", "w", "h") == "ε per x: the xs of one trial (w) h" + tail
    assert SHARED_NOISE.startswith("ε per model: the models of one trial (its λ grid") and SHARED_NOISE.endswith(tail)
    assert JOINT_RELEASE.startswith("ε per configuration: the configurations of one trial (its (ε, δ, α)")
    assert JOINT_RELEASE.endswith(tail) and "regression and rank noise" in JOINT_RELEASE
