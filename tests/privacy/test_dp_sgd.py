"""Numpy DP-SGD for logistic regression (spec seed-003 §2.7 steps 3–4)."""

from __future__ import annotations

import numpy as np
import pytest

from repro.learners.dp_sgd import private_gradient, train_dp_sgd_logistic
from repro.learners.logistic import per_sample_gradients, sigmoid
from repro.privacy.dp_sgd import clip_factors
from repro.privacy.sampling import poisson_batch


def _bce(X, y, w, b):
    p = sigmoid(X @ w + b)
    return -(y * np.log(p) + (1 - y) * np.log(1 - p))


def test_per_sample_gradients_match_finite_differences() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(7, 4))
    y = rng.integers(0, 2, 7).astype(float)
    w, b = rng.normal(size=4), 0.3
    G = per_sample_gradients(X, y, w, b)
    h = 1e-6
    for j in range(5):
        e = np.zeros(5)
        e[j] = h
        fd = (_bce(X, y, w + e[:4], b + e[4]) - _bce(X, y, w - e[:4], b - e[4])) / (2 * h)
        np.testing.assert_allclose(G[:, j], fd, rtol=1e-6, atol=1e-8)


def test_clipped_per_sample_gradients_have_norm_at_most_c() -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(scale=5, size=(200, 6))
    y = rng.integers(0, 2, 200).astype(float)
    w, b = rng.normal(size=6), -0.2
    G = per_sample_gradients(X, y, w, b)
    norms = np.linalg.norm(G, axis=1)
    clipped = G * clip_factors(norms, 1.5)[:, None]
    assert np.all(np.linalg.norm(clipped, axis=1) <= 1.5 + 1e-9)
    small = norms < 1.5 - 1e-3
    np.testing.assert_allclose(clipped[small], G[small], rtol=1e-5)
    # a gradient longer than C is scaled to norm exactly C (up to Opacus's +1e-6 in the denominator:
    # C·‖g‖/(‖g‖ + 10⁻⁶) is within 10⁻⁶ of C), in its own direction
    large = norms > 1.5
    assert 0 < np.count_nonzero(large) < norms.size
    np.testing.assert_allclose(np.linalg.norm(clipped[large], axis=1), 1.5, rtol=0, atol=1e-6)
    np.testing.assert_allclose(clipped[large] / 1.5, G[large] / norms[large, None], rtol=0, atol=1e-6)
    # the closed-form clipped sum used by training equals the explicit one
    gw, gb = private_gradient(X, y, w, b, clip_norm=1.5, noise_std=0.0, denominator=1.0,
                              rng=np.random.default_rng(0))
    np.testing.assert_allclose(np.r_[gw, gb], clipped.sum(axis=0), rtol=1e-10)


def test_noise_scale_of_the_private_gradient() -> None:
    # With y = σ(w·x + b) every per-sample gradient is 0: the private gradient is pure noise / denominator.
    rng = np.random.default_rng(2)
    X = rng.normal(size=(50, 3))
    w, b = rng.normal(size=3), 0.1
    y = sigmoid(X @ w + b)
    draws = np.array([np.r_[private_gradient(X, y, w, b, clip_norm=1.5, noise_std=3.0, denominator=40.0,
                                             rng=rng)] for _ in range(4000)]).reshape(4000, -1)
    sd = draws.std(axis=0, ddof=1)
    # 4000 draws: the sample std is within 5 % of 3/40 with overwhelming probability (se ≈ 1.1 %).
    np.testing.assert_allclose(sd, 3.0 / 40.0, rtol=0.05)
    assert abs(draws.mean()) < 5 * 0.075 / np.sqrt(draws.size)


def test_poisson_sampling_rate() -> None:
    rng = np.random.default_rng(3)
    n, q = 5000, 0.04
    sizes = np.array([poisson_batch(n, q, rng=rng).size for _ in range(2000)])
    # mean nq = 200, variance nq(1-q) = 192; 2000 batches: se of the mean ≈ 0.31
    assert abs(sizes.mean() - n * q) < 5 * np.sqrt(n * q * (1 - q) / 2000)
    assert abs(sizes.var(ddof=1) / (n * q * (1 - q)) - 1) < 0.15


def test_training_is_deterministic_and_learns() -> None:
    rng = np.random.default_rng(4)
    X = rng.normal(size=(3000, 5))
    y = (X @ np.array([2.0, -1, 0.5, 0, 1]) + rng.logistic(size=3000) > 0).astype(float)
    a = train_dp_sgd_logistic(X, y, noise_multiplier=1.0, epochs=30, batch_size=256, lr=0.5,
                              rng=np.random.default_rng(7))
    b = train_dp_sgd_logistic(X, y, noise_multiplier=1.0, epochs=30, batch_size=256, lr=0.5,
                              rng=np.random.default_rng(7))
    np.testing.assert_array_equal(a.model.w, b.model.w)
    assert a.steps == 30 * 12 and a.sampling_probability == pytest.approx(1 / 12)
    assert np.mean(a.model.predict(X) == y) > 0.8
    assert abs(a.mean_batch_size - 250) < 10
