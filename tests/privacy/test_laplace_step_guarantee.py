"""Algorithm 2's Laplace step alone (repro.fairness.private_postprocessing.step_guarantee): ε_a under "replace one
record's h, groups fixed", ε_a + log(1 + 1/n_a) under add/remove (spec seed-003 §2.4).

The exact ε of α̃ = clip(m/n + Lap(1/(nε)), 0, 1) between neighbours is the largest |log ratio| of the two output
laws: the densities on (0, 1) and the atoms at 0 and 1, over every count m and neighbour.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from repro.fairness.private_postprocessing import guarantee, private_group_rates, step_guarantee
from repro.privacy.guarantee import Neighbouring

X = np.linspace(0.0, 1.0, 20_001)


def _log_law(mean: float, scale: float) -> tuple[np.ndarray, float, float]:
    """Log density on (0, 1) and log atoms at 0 and 1 of clip(mean + Lap(scale), 0, 1)."""
    dens = -np.abs(X - mean) / scale - math.log(2 * scale)
    at0 = math.log(0.5) - mean / scale                       # P(mean + L ≤ 0), 0 ≤ mean ≤ 1
    at1 = math.log(0.5) - (1 - mean) / scale                 # P(mean + L ≥ 1)
    return dens, at0, at1


def _exact(pairs: list[tuple[float, float, float, float]]) -> float:
    worst = 0.0
    for m0, s0, m1, s1 in pairs:
        (d0, a0, b0), (d1, a1, b1) = _log_law(m0, s0), _log_law(m1, s1)
        worst = max(worst, float(np.max(np.abs(d1 - d0))), abs(a1 - a0), abs(b1 - b0))
    return worst


@pytest.mark.parametrize(("n", "eps"), [(5, 1.0), (20, 0.5), (3, 0.05)])
def test_add_remove_exceeds_eps_by_up_to_log_1_plus_1_over_n(n: int, eps: float) -> None:
    add_remove = [(m / n, 1 / (n * eps), mm / (n + 1), 1 / ((n + 1) * eps)) for m in range(n + 1) for mm in (m, m + 1)]
    exact = _exact(add_remove)
    bound = step_guarantee(eps, n).epsilon
    assert bound == pytest.approx(eps + math.log1p(1 / n))
    assert exact <= bound + 1e-9                                             # the guarantee holds
    # the exact value is ε·n/(n + 1) + log(1 + 1/n) (at x = m′/(n + 1)): above ε_a alone whenever
    # log(1 + 1/n) > ε/(n + 1), so ε_a is not an add/remove guarantee of the step
    assert exact == pytest.approx(eps * n / (n + 1) + math.log1p(1 / n), abs=1e-4)
    assert exact > eps
    replace_h = [(m / n, 1 / (n * eps), (m + 1) / n, 1 / (n * eps)) for m in range(n)]
    assert _exact(replace_h) == pytest.approx(eps, abs=1e-9)
    assert step_guarantee(eps).epsilon == eps and step_guarantee(eps).relation is Neighbouring.REPLACE_ONE


def test_the_step_draws_the_law_of_the_guarantee() -> None:
    """The code's step is the law above: Lap(1/(n ε)) on the group mean, clipped to [0, 1]."""
    n, eps = 8, 0.7
    h, a = np.r_[np.ones(3), np.zeros(5), np.ones(8)], np.r_[np.zeros(8), np.ones(8)].astype(int)
    rng = np.random.default_rng(0)
    draws = np.array([private_group_rates(h, a, eps, eps, rng=rng).alpha_tilde for _ in range(20_000)])
    at0 = math.exp(_log_law(3 / n, 1 / (n * eps))[1])
    # 20,000 draws: the atom's frequency within 5 standard errors
    assert abs(np.mean(draws == 0.0) - at0) < 5 * math.sqrt(at0 * (1 - at0) / draws.size)
    assert abs(np.median(draws) - 3 / n) < 0.02


def test_the_summed_claim_covers_add_remove_for_groups_of_the_thesis_size() -> None:
    # one group changes under add/remove: max_a (ε_a + log(1 + 1/n_a)) ≤ ε₀ + ε₁ once n_a ≥ 1/(e^{ε_b} − 1)
    eps0 = eps1 = 0.05
    n_min = math.ceil(1 / math.expm1(eps1))
    assert n_min == 20
    assert step_guarantee(eps0, n_min).epsilon <= guarantee(eps0, eps1).epsilon
    assert step_guarantee(eps0, n_min - 1).epsilon > guarantee(eps0, eps1).epsilon
