"""Private-FairNR's learner unit: its calibration meets the budget, and the ε it reports is the composition of
what it calibrated (spec seed-000-002-compat.md §5.4–§5.7)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from repro.errors import InvalidParameterError
from repro.learners import fairnr_unit
from repro.privacy.composition import composition_delta
from repro.privacy.guarantee import Label
from repro.theory import fairnr as fn
from repro.theory.sample_complexity import alg3_paper_eps_prime


def test_corrected_steps_compose_to_the_budget() -> None:
    c = fairnr_unit.configure("corrected", n=500, epsilon=1.0, delta=1e-5, T=20, m=5, C=2.0)
    assert c.k_steps == fn.corrected_k_steps(20, 5) == 20 * 5 + 20
    assert composition_delta(c.eps_step, c.k_steps, 1.0) <= 1e-5 < composition_delta(c.eps_step * 1.001, c.k_steps, 1.0)
    assert c.accounted_epsilon() == pytest.approx(1.0, rel=1e-6)
    assert c.learner_epsilon(np.zeros(20)) == c.accounted_epsilon()
    assert c.guarantee.label is Label.ACCOUNTED and c.reported_step_epsilon == c.eps_step


def test_paper_mode_is_unaccounted_and_bounds_the_learner_by_its_releases() -> None:
    n, eps, delta, T, m, C = 400, 2.0, 1e-4, 6, 3, 1.5
    c = fairnr_unit.configure("paper", n=n, epsilon=eps, delta=delta, T=T, m=m, C=C)
    assert c.eps_step is None and c.accounted_epsilon() == math.inf and c.guarantee.label is Label.NOMINAL
    assert c.eps_prime == alg3_paper_eps_prime(n, eps, delta, T, m, C)
    assert c.reported_step_epsilon == pytest.approx(c.eps_prime * (2 + C) / n)
    # with no dual mass every round's loss sensitivity is that of the plain error, so the bound is closed-form
    lam = np.zeros(T)
    sens = np.array([fn.cumulative_loss_sensitivity(n, t, 0.0) for t in range(1, T)])
    e = np.repeat(sens * c.eps_prime, m)
    advanced = float(np.sum(e * np.tanh(e / 2)) + math.sqrt(2 * math.log(1 / delta) * np.sum(e**2)))
    assert c.learner_epsilon(lam) == pytest.approx(min(e.sum(), advanced))


def test_nonprivate_and_unknown_modes() -> None:
    c = fairnr_unit.configure("nonprivate", n=10, epsilon=1.0, delta=1e-3, T=2, m=1, C=1.0)
    assert c.accounted_epsilon() == c.learner_epsilon(np.zeros(2)) == math.inf and math.isnan(c.reported_step_epsilon)
    with pytest.raises(InvalidParameterError, match="mode must be one of"):
        fairnr_unit.configure("exact", n=10, epsilon=1.0, delta=1e-3, T=2, m=1, C=1.0)
