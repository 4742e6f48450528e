"""Algorithms 1 and 2, Theorem 7, Proposition 6 and the Theorem 8 / Proposition 9 bounds
(spec seed-003 §2.2–§2.6)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from repro.errors import InvalidParameterError
from repro.fairness.private_postprocessing import (
    algorithm1,
    algorithm2,
    apply_rule,
    fair_rule,
    private_group_rates,
    proposition6_lower_bound,
    proposition9_sp_bound,
    theorem8_sp_bound,
)

rates = st.one_of(st.sampled_from([0.0, 1.0, 0.5]), st.floats(0, 1, allow_nan=False))


@given(rates, rates)
@settings(max_examples=400, deadline=None)
def test_thresholds_in_unit_interval_on_every_branch(alpha: float, beta: float) -> None:
    rule = fair_rule(alpha, beta)
    for v in (*rule.keep, *rule.flip):
        assert 0.0 <= v <= 1.0
    # one group is only ever turned off (flip 0), the other only turned on (keep 1)
    hi = 0 if alpha >= beta else 1
    assert rule.flip[hi] == 0.0 and rule.keep[1 - hi] == 1.0


@given(rates, rates)
@settings(max_examples=400, deadline=None)
def test_theorem7_exact_identities(alpha: float, beta: float) -> None:
    rule = algorithm1(alpha, beta)
    r0, r1 = rule.positive_rates(alpha, beta)
    assert r0 == pytest.approx(r1, abs=1e-12)               # Δ_SP = 0
    if not (alpha == 0 and beta == 0) and not (alpha == 1 and beta == 1):
        assert r0 == pytest.approx((alpha + beta) / 2, abs=1e-12)
    c0, c1 = rule.change_probabilities(alpha, beta)
    assert c0 + c1 == pytest.approx(abs(alpha - beta), abs=1e-12)   # U = |α − β|
    assert c0 == pytest.approx(abs(alpha - beta) / 2, abs=1e-12)
    assert c1 == pytest.approx(abs(alpha - beta) / 2, abs=1e-12)


def test_guards_at_the_edges() -> None:
    assert fair_rule(0.0, 0.0).keep == (1.0, 1.0) and fair_rule(0.0, 0.0).flip == (0.0, 0.0)
    assert fair_rule(1.0, 1.0).flip == (0.0, 0.0)
    r = fair_rule(0.0, 1.0)   # α < β branch: group 1 halved, group 0 flipped up with prob 1/2
    assert r.keep == (1.0, 0.5) and r.flip == (0.5, 0.0)
    with pytest.raises(InvalidParameterError, match=r"\[0, 1\]"):
        fair_rule(1.2, 0.3)


def test_monte_carlo_rates_after_the_rule() -> None:
    rng = np.random.default_rng(0)
    n = 200_000
    a = rng.integers(0, 2, n)
    h = np.where(a == 0, rng.random(n) < 0.1, rng.random(n) < 0.3).astype(int)
    alpha, beta = h[a == 0].mean(), h[a == 1].mean()
    out = apply_rule(h, a, algorithm1(alpha, beta), rng=rng)
    target = (alpha + beta) / 2
    for g in (0, 1):
        m = (a == g).sum()
        assert abs(out[a == g].mean() - target) < 5 * math.sqrt(target * (1 - target) / m)
    # only the allowed direction of change happens in each group
    assert np.all(out[(a == 0) & (h == 1)] == 1) and np.all(out[(a == 1) & (h == 0)] == 0)


def test_laplace_noise_scale_and_clipping() -> None:
    rng = np.random.default_rng(1)
    a = np.r_[np.zeros(400, int), np.ones(1600, int)]
    h = np.r_[np.ones(40, int), np.zeros(360, int), np.ones(800, int), np.zeros(800, int)]
    draws = np.array([[r.alpha_tilde, r.beta_tilde] for r in
                      (private_group_rates(h, a, 0.5, 0.5, rng=rng) for _ in range(20_000))])
    # scales b0 = 1/(400·0.5) = 0.005, b1 = 1/(1600·0.5) = 0.00125; E|Lap(b)| = b (no clipping here)
    np.testing.assert_allclose(np.abs(draws - [0.1, 0.5]).mean(axis=0), [0.005, 0.00125], rtol=0.03)
    r = private_group_rates(np.zeros(10, int), np.r_[np.zeros(5, int), np.ones(5, int)], 0.01, 0.01, rng=rng)
    assert 0.0 <= r.alpha_tilde <= 1.0 and 0.0 <= r.beta_tilde <= 1.0
    assert [e.noise_multiplier for e in r.events] == [100.0, 100.0]


def test_proposition6_on_random_perturbations() -> None:
    rng = np.random.default_rng(2)
    for _ in range(2000):
        alpha, beta = rng.random(2)
        keep, flip = rng.random(2), rng.random(2)
        r0 = alpha * keep[0] + (1 - alpha) * flip[0]
        r1 = beta * keep[1] + (1 - beta) * flip[1]
        u = alpha * (1 - keep[0]) + (1 - alpha) * flip[0] + beta * (1 - keep[1]) + (1 - beta) * flip[1]
        assert u >= proposition6_lower_bound(alpha, beta, abs(r0 - r1)) - 1e-12
    # and on empirical (finite-sample) perturbations of hard predictions
    for _ in range(200):
        n = 300
        a = rng.integers(0, 2, n)
        h = (rng.random(n) < rng.random()).astype(int)
        hh = np.where(rng.random(n) < rng.random() * 0.3, 1 - h, h)
        al, be = h[a == 0].mean(), h[a == 1].mean()
        gamma = abs(hh[a == 0].mean() - hh[a == 1].mean())
        u = np.mean(hh[a == 0] != h[a == 0]) + np.mean(hh[a == 1] != h[a == 1])
        assert u >= proposition6_lower_bound(al, be, gamma) - 1e-12


def test_bound_values() -> None:
    # hand computation: n0 = 3700, n1 = 7600, ε = 0.05, η = 0.05
    n0, n1, e, eta = 3700, 7600, 0.05, 0.05
    expected = (math.log(80) / (n0 * e) + math.log(80) / (n1 * e) + math.sqrt(math.log(160) / (2 * n0))
                + math.sqrt(math.log(160) / (2 * n1)))
    assert theorem8_sp_bound(n0, n1, e, e, eta) == pytest.approx(expected)
    assert proposition9_sp_bound(n0, n1, e, e) == pytest.approx(
        1 / 185 + 1 / 380 + math.sqrt(1 / 14800) + math.sqrt(1 / 30400))
    with pytest.raises(InvalidParameterError, match="eta"):
        theorem8_sp_bound(n0, n1, e, e, 1.5)


def test_algorithm2_end_to_end_is_reproducible() -> None:
    rng = np.random.default_rng(3)
    a = rng.integers(0, 2, 5000)
    h = (rng.random(5000) < np.where(a == 0, 0.1, 0.3)).astype(int)
    r1, p1 = algorithm2(h, a, 0.05, 0.05, rng=np.random.default_rng(9))
    r2, p2 = algorithm2(h, a, 0.05, 0.05, rng=np.random.default_rng(9))
    assert r1 == r2 and p1 == p2
    assert r1.branch == "alpha<beta"
