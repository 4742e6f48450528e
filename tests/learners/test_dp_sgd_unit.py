"""The DP-SGD learner unit: calibration in one place, and the compiled fit against the numpy reference.

Spec: seed-003-thesis.md §2.7, §3.2. Tolerance 1e-9 relative against the reference (same draws, summation
order only); bytes equal alone and batched.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from repro.errors import InvalidParameterError
from repro.learners.dp_sgd import train_dp_sgd_logistic
from repro.learners.dp_sgd_unit import DPSGDConfig, configure, fit_many, schedule, train
from repro.privacy.accounting import calibrate_noise_multiplier, dp_sgd_epsilon, opacus_sampling


def _data(n: int = 700, d: int = 5, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    return X, (X[:, 0] + rng.standard_normal(n) > 0).astype(np.int64)


@pytest.mark.parametrize("z, rule", [(0.0, "opacus"), (1.3, "opacus"), (0.8, "B/n")])
def test_compiled_dp_sgd_equals_the_numpy_reference(z: float, rule: str) -> None:
    X, y = _data()
    cfg = DPSGDConfig(noise_multiplier=z, clip_norm=1.5, lr=0.1, batch_size=100, epochs=3, sampling_rule=rule)
    ref = train_dp_sgd_logistic(X, y, noise_multiplier=z, clip_norm=1.5, lr=0.1, batch_size=100, epochs=3,
                                sampling_rule=rule, rng=np.random.default_rng(4))
    got = train(X, y, cfg, rng=np.random.default_rng(4))
    np.testing.assert_allclose(got.model.w, ref.model.w, rtol=1e-9, atol=1e-12)
    assert got.model.b == pytest.approx(ref.model.b, rel=1e-9, abs=1e-12)
    assert (got.steps, got.sampling_probability, got.mean_batch_size) == (
        ref.steps, ref.sampling_probability, ref.mean_batch_size)


def test_a_dp_sgd_trial_gives_the_same_bytes_alone_and_batched() -> None:
    X, y = _data()
    cfg = DPSGDConfig(noise_multiplier=1.0, batch_size=64, epochs=2, lr=0.1)
    alone = train(X, y, cfg, rng=np.random.default_rng(7))
    for size in (1, 2, 15):
        gens = [np.random.default_rng(50 + i) for i in range(size - 1)] + [np.random.default_rng(7)]
        got = fit_many(X, y, [cfg] * size, gens)[-1]
        assert np.array_equal(got.model.w, alone.model.w) and got.model.b == alone.model.b


def test_configure_calibrates_with_the_pld_accountant_and_states_its_epsilon() -> None:
    n, eps, delta = 3000, 1.5, 1e-5
    c = configure(n=n, epsilon=eps, delta=delta, batch_size=256, epochs=2)
    q, T = opacus_sampling(n, 256, 2)
    assert (c.sampling_probability, c.steps) == (q, T) == schedule(c.config, n)
    assert c.config.noise_multiplier == calibrate_noise_multiplier(eps, delta, q, T)
    assert c.guarantee.epsilon == dp_sgd_epsilon(c.config.noise_multiplier, q, T, delta) <= eps
    given = configure(n=n, epsilon=None, noise_multiplier=2.0, delta=delta, batch_size=256, epochs=2)
    assert given.config.noise_multiplier == 2.0 and given.guarantee.epsilon == dp_sgd_epsilon(2.0, q, T, delta)
    assert configure(n=n, epsilon=math.inf, delta=delta).guarantee.label == "non-private"
    with pytest.raises(InvalidParameterError, match="exactly one"):
        configure(n=n, epsilon=1.0, noise_multiplier=1.0, delta=delta)
    with pytest.raises(InvalidParameterError, match="clip_norm"):
        DPSGDConfig(clip_norm=0.0)
