"""The project's DP-SGD event (repro.privacy.accounting.dp_sgd_event: q, z and the step count) against
published reference numbers.

Sources (facts only; no code is taken from them):

- dp-accounting's own test ``rdp_privacy_accountant_test.py::test_compute_rdp_poisson_sampled_gaussian``
  (google/differential-privacy, python/dp_accounting): 50 Poisson-subsampled Gaussian steps with z = 2.5,
  q = 0.01 have RDP 6.70579741e-04, 1.08548710e-03, 2.18075656e-03, 2.38460375e-02 and 1.67416308e+02 at the
  orders 1.5, 2.5, 5, 50 and 100 (their tolerance: relative 10⁻⁴).
- TensorFlow Privacy's ``tutorials/README.md`` (MNIST DP-SGD, 60,000 examples, batch 256, δ = 10⁻⁵, the RDP
  accountant with orders 1.1, 1.2, …, 10.9 and 12, …, 63 and the classical conversion
  ε = min_α RDP(α) + log(1/δ)/(α − 1)): z = 1.12 for 60 epochs gives ε = 2.92; z = 1.2 for 10 epochs gives 1.20;
  z = 0.6 for 30 epochs gives 9.74 (printed to two decimals by an older release; today's RDP gives 9.76).

A wrong step count (for example T/2), a wrong q or a wrong noise multiplier in the event fails these tests.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as rdp

from repro.privacy.accounting import dp_sgd_epsilon, dp_sgd_event


def test_rdp_of_the_dp_sgd_event_matches_dp_accountings_published_values() -> None:
    acc = rdp.RdpAccountant(orders=[1.5, 2.5, 5, 50, 100])
    acc.compose(dp_sgd_event(2.5, 0.01, 50))
    np.testing.assert_allclose(acc._rdp, [6.70579741e-04, 1.08548710e-03, 2.18075656e-03, 2.38460375e-02,
                                          1.67416308e02], rtol=1e-4)


TF_ORDERS = [1 + x / 10 for x in range(1, 100)] + list(range(12, 64))


@pytest.mark.parametrize(("z", "epochs", "published", "tol"), [(1.12, 60, 2.92, 0.005), (1.2, 10, 1.20, 0.005),
                                                              (0.6, 30, 9.74, 0.025)])
def test_epsilon_of_the_tensorflow_privacy_tutorial(z: float, epochs: int, published: float, tol: float) -> None:
    steps = epochs * 60_000 // 256
    acc = rdp.RdpAccountant(orders=TF_ORDERS)
    acc.compose(dp_sgd_event(z, 256 / 60_000, steps))
    eps = min(r + math.log(1 / 1e-5) / (o - 1) for o, r in zip(TF_ORDERS, acc._rdp, strict=True))
    assert eps == pytest.approx(published, abs=tol)
    # the project's accountants are tighter than the classical conversion, never looser
    assert dp_sgd_epsilon(z, 256 / 60_000, steps, 1e-5) <= dp_sgd_epsilon(z, 256 / 60_000, steps, 1e-5, "rdp") <= eps
