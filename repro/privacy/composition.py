"""Composition of pure ε₀-DP steps: the exact (optimal) k-fold composition, its inverse (the per-step ε₀ that
meets a budget) and the advanced-composition bound for heterogeneous steps. Private-FairNR's accounting
(Cummings et al. 2019, spec seed-000-002-compat.md §5.7) reads them through its learner unit
(:mod:`repro.learners.fairnr_unit`)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
from scipy import stats

from repro.errors import InvalidParameterError

__all__ = ["composition_delta", "pure_composition_epsilon", "calibrate_step_epsilon",
           "heterogeneous_composition_epsilon"]


def composition_delta(eps_step: float, k: int, eps_total: float) -> float:
    """Exact δ(ε_total) of the k-fold composition of ε_step-DP mechanisms (optimal composition).

    Every ε₀-DP mechanism is dominated by binary randomized response, whose k-fold privacy loss is
    ε₀(k − 2i) with i ~ Binomial(k, 1/(1+e^{ε₀})) (Kairouz, Oh & Viswanath 2015), so
    δ = Σ_i Pr[i] (1 − e^{ε_total − ε₀(k−2i)})₊. Spec: §5.7 ("better: PLD composition"); checked
    against dp_accounting's PLD accountant in the tests.
    """
    if k <= 0:
        return 0.0
    i = np.arange(k + 1)
    q = 1.0 / (1.0 + math.exp(eps_step))
    logpmf = stats.binom.logpmf(i, k, q)
    loss = eps_step * (k - 2 * i)
    mask = loss > eps_total
    if not mask.any():
        return 0.0
    terms = np.exp(logpmf[mask]) * -np.expm1(eps_total - loss[mask])
    return float(np.sum(terms))


def _bisect(holds: Callable[[float], bool], lo: float, hi: float, halvings: int, *, holds_above: bool) -> float:
    """The end of [lo, hi] on the side of the boundary where the monotone ``holds`` is true (above the boundary
    when ``holds_above``, below it otherwise), after ``halvings`` bisection steps."""
    for _ in range(halvings):
        mid = 0.5 * (lo + hi)
        if holds(mid) == holds_above:
            hi = mid
        else:
            lo = mid
    return hi if holds_above else lo


def pure_composition_epsilon(eps_step: float, k: int, delta: float) -> float:
    """Smallest ε_total with composition_delta(ε_step, k, ε_total) ≤ δ (bisection; ≤ k·ε_step)."""
    if composition_delta(eps_step, k, 0.0) <= delta:
        return 0.0
    return _bisect(lambda e: composition_delta(eps_step, k, e) <= delta, 0.0, k * eps_step, 100, holds_above=True)


@functools.lru_cache(maxsize=256)
def calibrate_step_epsilon(epsilon: float, delta: float, k: int) -> float:
    """Largest per-step ε₀ such that k ε₀-DP steps compose (optimally) to (ε, δ)-DP (bisection)."""
    if not epsilon > 0 or not 0 < delta < 1 or k < 1:
        raise InvalidParameterError(f"need ε > 0, δ ∈ (0, 1), k ≥ 1; got {epsilon}, {delta}, {k}.")
    lo, hi = epsilon / k, epsilon  # k·ε₀ ≤ ε is always enough; ε₀ = ε is enough only if k = 1
    if composition_delta(hi, k, epsilon) <= delta:
        return hi
    return _bisect(lambda e0: composition_delta(e0, k, epsilon) <= delta, lo, hi, 80, holds_above=False)


def heterogeneous_composition_epsilon(eps_steps: np.ndarray, delta: float) -> float:
    """Upper bound on the ε of composing pure ε_i-DP steps at δ: min(Σε_i, advanced composition).

    Advanced composition for heterogeneous pure steps (Kairouz, Oh & Viswanath 2015, Thm 3.5):
    Σ ε_i (e^{ε_i} − 1)/(e^{ε_i} + 1) + √(2 ln(1/δ) Σ ε_i²). Spec: §1.7 (Thm 6), §5.7.
    """
    e = np.asarray(eps_steps, dtype=float)
    e = e[e > 0]
    if e.size == 0:
        return 0.0
    advanced = float(np.sum(e * np.tanh(e / 2.0)) + math.sqrt(2.0 * math.log(1.0 / delta) * np.sum(e**2)))
    return min(float(e.sum()), advanced)
