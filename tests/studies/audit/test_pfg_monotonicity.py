"""Private-Fair-Greedy's own noise is at least the exact noise its claim needs (the monotonicity argument of
docs/privacy-audit.md): the PFG audits run the accountant's (smaller) σ and c, where the attack has power; the
policy's releases are those plus independent Gaussian noise (a post-processing), so they are at least as private.

Checked at the shipped settings (experiments/_base/pfg-bandits.toml: ε = 15, δ = 0.1, α_ε = α_δ = 0.9,
T = 50,000 and the smoke T = 3,000), at the audits' settings and on a grid.
"""

from __future__ import annotations

import math

import pytest

from repro.bandits.policies import budget_split
from repro.privacy.tree_mechanism import gaussian_tree_sigma, rank_noise_constant, tree_height, zcdp_rho
from repro.studies.audit.bounds import gaussian_mu

CASES = [(15.0, 0.1, 0.9, 50_000), (15.0, 0.1, 0.9, 3_000), (2.0, 0.02, 0.5, 20), (2.0, 0.02, 0.5, 16)] + [
    (eps, delta, 0.5, T) for eps in (0.5, 1.0, 4.0) for delta in (1e-3, 0.05) for T in (100, 10_000)]


@pytest.mark.parametrize(("epsilon", "delta", "alpha", "T"), CASES)
def test_policy_noise_covers_the_exact_noise_of_its_claim(epsilon: float, delta: float, alpha: float, T: int) -> None:
    s = budget_split(epsilon, delta, alpha, alpha, "paper")
    # tree: each item enters m nodes; a replaced item moves a node's [x; y][x; y]ᵀ by at most 2L̃² (Frobenius)
    m = tree_height(T / 2)
    sigma_policy = gaussian_tree_sigma(1.0, m, s.epsilon_reg, s.delta_reg)
    sigma_exact = 2.0 * math.sqrt(m) / gaussian_mu(s.epsilon_reg, s.delta_reg)
    assert sigma_policy >= sigma_exact
    # rank noise: T releases of sensitivity 1 with noise multiplier c are exactly √T/c-GDP
    c_policy = rank_noise_constant(T, zcdp_rho(s.epsilon_rank, s.delta_rank))
    c_exact = math.sqrt(T) / gaussian_mu(s.epsilon_rank, s.delta_rank)
    assert c_policy >= c_exact
