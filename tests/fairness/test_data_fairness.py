"""Data unfairness Δ, Δ′, Lemma 13, Lemma 16, perturbed statistics and classifier gaps.

Spec: ../shared/specs/seed-003-thesis.md §1.2, §1.3, §5.3, §9.1 items 4 and 6.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from repro.errors import InvalidParameterError
from repro.fairness.data_fairness import (
    binary_ratio,
    delta,
    delta_prime,
    group_stats,
    perturbed_stats,
)
from repro.privacy.ldp_mechanisms import grr_matrix, perturb


def test_delta_and_delta_prime_by_hand() -> None:
    # groups: p = (0.25, 0.75), p1 = (0.2, 0.6): Pr(Y=1) = 0.05 + 0.45 = 0.5
    p, p1 = np.array([0.25, 0.75]), np.array([0.2, 0.6])
    assert delta_prime(p, p1) == pytest.approx(0.4)
    assert delta(p, p1) == pytest.approx(max(abs(0.2 / 0.5 - 1), abs(0.6 / 0.5 - 1)))  # 0.6
    # three groups, empty group ignored
    p, p1 = np.array([0.5, 0.0, 0.5]), np.array([0.1, np.nan, 0.3])
    assert delta_prime(p, p1) == pytest.approx(0.2)
    assert delta(p, p1) == pytest.approx(0.5)  # |0.1/0.2 − 1| = |0.3/0.2 − 1| = 0.5


def test_group_stats_by_hand() -> None:
    a = np.array([0, 0, 1, 1, 1, 2])
    y = np.array([1, 0, 1, 1, 0, 0])
    p, p1, py = group_stats(a, y)
    assert np.allclose(p, [2 / 6, 3 / 6, 1 / 6])
    assert np.allclose(p1, [0.5, 2 / 3, 0.0])
    assert py == pytest.approx(0.5)
    p, p1, _ = group_stats(a, y, k=4)
    assert p[3] == 0 and math.isnan(p1[3])
    with pytest.raises(InvalidParameterError):
        group_stats(a, y[:-1])


def test_perturbed_stats_match_empirical_frequencies() -> None:
    rng = np.random.default_rng(1)
    n, k = 400_000, 4
    a = rng.choice(k, n, p=[0.1, 0.2, 0.3, 0.4])
    y = (rng.random(n) < np.array([0.2, 0.4, 0.5, 0.9])[a]).astype(int)
    q = grr_matrix(k, 1.0)
    z = perturb(a, q, rng=rng)
    p, p1, _ = group_stats(a, y, k)
    pz, p1z = perturbed_stats(p, p1, q)
    pz_emp, p1z_emp, _ = group_stats(z, y, k)
    assert np.allclose(pz, pz_emp, atol=4e-3)     # sd ≤ 0.0008
    assert np.allclose(p1z, p1z_emp, atol=1e-2)   # sd ≤ 0.002
    assert delta_prime(pz, p1z) == pytest.approx(delta_prime(pz_emp, p1z_emp), abs=2e-2)


def test_lemma13_grr_never_increases_delta_prime() -> None:
    rng = np.random.default_rng(2)
    for _ in range(2000):
        k = int(rng.integers(2, 11))
        p = rng.dirichlet(np.ones(k))
        p1 = rng.random(k)
        eps = float(rng.uniform(0.01, 10))
        pz, p1z = perturbed_stats(p, p1, grr_matrix(k, eps))
        assert delta_prime(pz, p1z) <= delta_prime(p, p1) + 1e-12
        assert p1z.min() >= p1.min() - 1e-12 and p1z.max() <= p1.max() + 1e-12  # convex combinations


def test_lemma16_constants() -> None:
    rng = np.random.default_rng(3)
    for _ in range(2000):
        k = int(rng.integers(2, 11))
        p = rng.dirichlet(np.ones(k))
        p1 = rng.random(k)
        py = float(p @ p1)
        d, dp = delta(p, p1), delta_prime(p, p1)
        assert d <= dp / py + 1e-12
        assert dp <= 2 * py * d + 1e-12


def test_binary_ratio_equals_delta_prime_ratio_and_is_free_of_base_rates() -> None:
    rng = np.random.default_rng(4)
    for _ in range(200):
        p0 = float(rng.uniform(0.05, 0.95))
        pp, qq = rng.uniform(0.5, 1, 2)
        b = np.sort(rng.random(2))
        q = np.array([[pp, 1 - pp], [1 - qq, qq]])
        p = np.array([p0, 1 - p0])
        pz, p1z = perturbed_stats(p, b, q)
        assert binary_ratio(p0, pp, qq) == pytest.approx(delta_prime(pz, p1z) / delta_prime(p, b), rel=1e-9)
