"""DP-SGD loop (issue 14, defect 4): σ = z·C, the sum divided by the *expected* batch size (Opacus).

Spec: seed-003-thesis.md §2.7 steps 3–4, §3.2.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import repro.learners.dp_sgd as dps
from repro.learners.logistic import torch_linear_init


def test_loop_passes_sigma_z_times_c_and_the_expected_batch_size(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[float, float, int]] = []
    original = dps.private_gradient

    def spy(XB, yB, w, b, **kw):
        calls.append((kw["noise_std"], kw["denominator"], XB.shape[0]))
        return original(XB, yB, w, b, **kw)

    monkeypatch.setattr(dps, "private_gradient", spy)
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(230, 3)), rng.integers(0, 2, 230)
    res = dps.train_dp_sgd_logistic(X, y, noise_multiplier=1.3, clip_norm=0.7, batch_size=50, epochs=3, rng=rng)
    q = res.sampling_probability
    assert q == pytest.approx(1 / 5) and res.steps == 15 == len(calls)
    assert all(std == pytest.approx(1.3 * 0.7) for std, _, _ in calls)
    assert all(den == int(230 * q) == 46 for _, den, _ in calls)
    assert len({size for *_, size in calls}) > 1  # Poisson batches vary; the denominator does not


def test_noise_std_end_to_end_on_zero_columns() -> None:
    """A feature column of zeros gets gradient (0 + N(0, (zC)²))/E[B] per step, so after T steps with lr η its
    weight has moved by N(0, T(ηzC/E[B])²). 300 zero columns of one run give 300 draws; the sample std is
    checked to ±15 % (≈ 3.7 standard errors of a std estimated from 300 draws)."""
    n, d0, B, epochs, z, C, lr = 1000, 300, 100, 2, 1.3, 0.7, 1.0
    X = np.zeros((n, d0 + 1))
    X[:, 0] = np.random.default_rng(1).normal(size=n)
    y = (X[:, 0] > 0).astype(float)
    res = dps.train_dp_sgd_logistic(X, y, noise_multiplier=z, clip_norm=C, lr=lr, batch_size=B, epochs=epochs,
                                    rng=np.random.default_rng(2))
    w0, _ = torch_linear_init(d0 + 1, rng=np.random.default_rng(2))  # the run's first draws
    moved = res.model.w[1:] - w0[1:]
    expected = lr * z * C * math.sqrt(res.steps) / int(n * res.sampling_probability)
    assert res.steps == 20
    assert np.std(moved) == pytest.approx(expected, rel=0.15)
    assert abs(np.mean(moved)) < 4 * expected / math.sqrt(d0)
