"""The Theorem 8 check of ``repro.studies.thesis.theorem8`` on a synthetic population (no data set).

Spec: ../shared/specs/seed-003-thesis.md §2.4 (Algorithm 2: ε-DP group rates by the Laplace mechanism), §9.1.
"""

from __future__ import annotations

import numpy as np
import pytest

from repro.fairness import private_postprocessing as pp
from repro.studies.thesis import theorem8


def test_theorem8_draws_laplace_rates_of_scale_one_over_n_eps(monkeypatch) -> None:
    """Algorithm 2 releases ᾱ + Lap(1/(n₀ε₀)) and β̄ + Lap(1/(n₁ε₁)) (sensitivity of a group mean: 1/n_a).

    The rates handed to the fair rule minus ᾱ, β̄ (the same seeded stream: Bin(n₀, α)/n₀ then Bin(n₁, β)/n₁ are
    the first two draws) are the Laplace noise; E|Lap(b)| = b. 2000 runs: relative SE 1/√2000 = 2.2 %, checked
    to ±8 % (≈ 3.6 SE), two-sided, so a scale off by ≥ 10 % (e.g. ×0.1, or n₀ε₀ and n₁ε₁ swapped: ×2) fails.
    α, β ≈ 0.5 and b ≤ 1/150 keep every rate inside [0, 1], so the clip never acts (asserted)."""
    n, runs = 4000, 2000
    a = np.r_[np.zeros(n // 2, dtype=np.int64), np.ones(n // 2, dtype=np.int64)]
    h = np.r_[np.tile([1, 0], n // 4), np.tile([1, 1, 0, 0, 0], n // 10)]       # α = 0.5, β = 0.4
    n0, n1, eps0, eps1 = 300, 150, 0.5, 2.0
    monkeypatch.setattr(theorem8, "_population", lambda *args: (h, a, n0, n1))
    seen = []

    def recording_rule(alpha, beta):
        seen.append((alpha, beta))
        return pp.fair_rule(alpha, beta)

    monkeypatch.setattr(theorem8, "fair_rule", recording_rule)
    params = {"dataset": "synthetic", "base_seed": 0, "noise_multiplier": 1.0, "epochs": 1, "subsample": 1,
              "eps0": eps0, "eps1": eps1, "eta": 0.1, "runs": runs}
    out = theorem8._theorem8(params, np.random.default_rng(17), (None, None))
    rec = out.records[0]
    assert (rec["alpha"], rec["beta"], rec["n0"], rec["n1"]) == (0.5, 0.4, n0, n1)
    rng = np.random.default_rng(17)
    a_bar, b_bar = rng.binomial(n0, 0.5, runs) / n0, rng.binomial(n1, 0.4, runs) / n1
    a_til, b_til = np.array(seen).T
    assert a_til.size == runs and np.all((a_til > 0) & (a_til < 1) & (b_til > 0) & (b_til < 1))
    noise_a, noise_b = a_til - a_bar, b_til - b_bar
    assert np.mean(np.abs(noise_a)) == pytest.approx(1 / (n0 * eps0), rel=0.08)
    assert np.mean(np.abs(noise_b)) == pytest.approx(1 / (n1 * eps1), rel=0.08)
    assert abs(np.median(noise_a)) < 0.1 / (n0 * eps0) and abs(np.median(noise_b)) < 0.1 / (n1 * eps1)
