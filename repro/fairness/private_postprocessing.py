"""Algorithms 1 and 2 of the thesis (Part I): fair and private-fair post-processing of a binary
classifier to statistical parity, with the bounds of Proposition 6, Theorem 8 and Proposition 9.

Spec: seed-003-thesis.md §2.2–§2.6 and §10 P1 (the corrected Algorithm 2: ᾱ, β̄ normalized by their
own group sizes n₀ = θn and n₁ = θ̄n; Laplace scales 1/(n₀ε₀) and 1/(n₁ε₁); results clipped to
[0, 1]; division guards as in the author's code).

A post-processing rule is stored as two numbers per group a:
``keep[a]`` = P(Ŷ=1 | h_a(x)=1) and ``flip[a]`` = P(Ŷ=1 | h_a(x)=0). With α ≥ β (Algorithm 1,
step 3): keep = ((α+β)/(2α), 1), flip = (0, (α−β)/(2(1−β))); symmetric otherwise. Both groups then
have positive rate (α+β)/2 when α, β are the true rates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from repro.errors import InvalidParameterError
from repro.privacy.accounting import laplace_event
from repro.privacy.guarantee import Guarantee, Label, Neighbouring

__all__ = [
    "guarantee",
    "step_guarantee",
    "FairRule",
    "fair_rule",
    "algorithm1",
    "apply_rule",
    "PrivateRates",
    "private_group_rates",
    "algorithm2",
    "proposition6_lower_bound",
    "theorem8_sp_bound",
    "proposition9_sp_bound",
]


def guarantee(eps0: float, eps1: float) -> Guarantee:
    """Steps 1–2 of Algorithm 2 (spec seed-003 §2.4): Lap(1/(n_a ε_a)) on each group's positive rate, basic
    composition ε₀ + ε₁ (pure DP). Public-statistics caveat: the scales use the group sizes n₀, n₁ as fixed
    (a record added, removed or moved between groups changes them).

    Each step alone is ε_a-DP only for "replace one record's h, groups fixed"; under add/remove it is
    (ε_a + log(1 + 1/n_a))-DP (:func:`step_guarantee`). An added or removed record changes one group only, so
    the sum ε₀ + ε₁ covers it whenever log(1 + 1/n_a) ≤ ε_b for the other group b (n_a ≥ 1/(e^{ε_b} − 1):
    20 records at ε_b = 0.05); a record moved between groups is two such changes and is not covered."""
    return Guarantee(eps0 + eps1, 0.0, Label.PUBLIC_STATISTICS, Neighbouring.ADD_OR_REMOVE_ONE,
                     protects="the classifier outputs and groups of the post-processing split",
                     caveat="group sizes n0, n1 of the post-processing split treated as public",
                     accountant="Laplace mechanism, basic composition")


def step_guarantee(eps_a: float, n_a: int | None = None) -> Guarantee:
    """One group's Laplace step α̃_a = clip(ᾱ_a + Lap(1/(n_a ε_a)), 0, 1) alone (spec seed-003 §2.4).

    ``n_a=None``: ε_a under *replace one record's h, its group and the group sizes fixed* (sensitivity 1/n_a
    over scale 1/(n_a ε_a), exact). With ``n_a`` (the smaller group size of the two neighbours): ε_a +
    log(1 + 1/n_a) under *add or remove one record of group a*: the means m/n_a and m′/(n_a + 1) sit under
    Laplace scales 1/(n_a ε_a) and 1/((n_a + 1)ε_a), so on [0, 1] the log density ratio is at most
    log((n_a + 1)/n_a) + ε_a·max(|n_a x − m| − |(n_a + 1)x − m′|) ≤ log(1 + 1/n_a) + ε_a, and the clipped
    atoms at 0 and 1 differ by at most ε_a. The exact value is ε_a·n_a/(n_a + 1) + log(1 + 1/n_a), above ε_a
    whenever ε_a < (n_a + 1)·log(1 + 1/n_a) (so for every ε_a ≤ 1): tests/privacy/test_laplace_step_guarantee.py.
    """
    if not eps_a > 0:
        raise InvalidParameterError(f"eps_a must be > 0; got {eps_a}.")
    if n_a is None:
        return Guarantee(float(eps_a), 0.0, Label.PUBLIC_STATISTICS, Neighbouring.REPLACE_ONE,
                         protects="one record's classifier output h (its group kept)",
                         caveat="groups and group sizes of the post-processing split fixed",
                         accountant="Laplace mechanism (sensitivity 1/n_a)")
    if n_a < 1:
        raise InvalidParameterError(f"n_a must be >= 1; got {n_a}.")
    return Guarantee(float(eps_a) + math.log1p(1.0 / n_a), 0.0, Label.PUBLIC_STATISTICS,
                     Neighbouring.ADD_OR_REMOVE_ONE, protects="one record of group a (its h and its presence)",
                     caveat="the group size n_a treated as public (the bound uses the smaller of the two)",
                     accountant="Laplace mechanism with a data-dependent scale, output clipped to [0, 1]")


def _check_rate(name: str, v: float) -> float:
    v = float(v)
    if not 0.0 <= v <= 1.0 or math.isnan(v):
        raise InvalidParameterError(f"{name} must be a rate in [0, 1]; got {v}.")
    return v


@dataclass(frozen=True)
class FairRule:
    """Randomized post-processing: P(Ŷ=1 | h=1, A=a) = keep[a], P(Ŷ=1 | h=0, A=a) = flip[a]."""

    alpha: float
    beta: float
    keep: tuple[float, float]
    flip: tuple[float, float]

    @property
    def branch(self) -> str:
        return "alpha>=beta" if self.alpha >= self.beta else "alpha<beta"

    def positive_rates(self, rate0: float, rate1: float) -> tuple[float, float]:
        """Group positive rates after the rule, when h₀, h₁ have positive rates ``rate0``, ``rate1``."""
        return (rate0 * self.keep[0] + (1 - rate0) * self.flip[0],
                rate1 * self.keep[1] + (1 - rate1) * self.flip[1])

    def change_probabilities(self, rate0: float, rate1: float) -> tuple[float, float]:
        """P_{μ_a}(ĥ_a(X) ≠ h_a(X)) for a = 0, 1 (their sum is U(ĥ), spec §2.1)."""
        return (rate0 * (1 - self.keep[0]) + (1 - rate0) * self.flip[0],
                rate1 * (1 - self.keep[1]) + (1 - rate1) * self.flip[1])


def fair_rule(alpha: float, beta: float) -> FairRule:
    """The flip rule of Algorithm 1 / step 4 of Algorithm 2 for estimated rates α (A=0), β (A=1).

    Guards (author's code): the A=0 rule only if α ≠ 0 and the A=1 rule only if β ≠ 1 (α ≥ β
    branch); symmetrically otherwise. Every threshold lies in [0, 1].
    Spec: seed-003 §2.3, §2.4 step 4.
    """
    alpha, beta = _check_rate("alpha", alpha), _check_rate("beta", beta)
    if alpha >= beta:
        keep0 = (alpha + beta) / (2 * alpha) if alpha != 0 else 1.0
        flip1 = (alpha - beta) / (2 * (1 - beta)) if beta != 1 else 0.0
        return FairRule(alpha, beta, keep=(keep0, 1.0), flip=(0.0, flip1))
    keep1 = (alpha + beta) / (2 * beta)  # beta > alpha >= 0
    flip0 = (beta - alpha) / (2 * (1 - alpha))  # alpha < beta <= 1
    return FairRule(alpha, beta, keep=(1.0, keep1), flip=(flip0, 0.0))


def algorithm1(alpha: float, beta: float) -> FairRule:
    """Algorithm 1 (non-private optimal fair classifier) for the TRUE group rates α, β.

    Theorem 7: the result has Δ_SP = 0 and U = |α − β|. Spec: seed-003 §2.3.
    """
    return fair_rule(alpha, beta)


def apply_rule(h: np.ndarray, a: np.ndarray, rule: FairRule, *, rng: np.random.Generator) -> np.ndarray:
    """Post-processed predictions: one s ~ U(0, 1) per query, Ŷ = 1[s ≤ threshold] (vectorized).

    Spec: seed-003 §2.3 step 2–3, §2.7 step 6.
    """
    h = np.asarray(h)
    a = np.asarray(a)
    if h.shape != a.shape:
        raise InvalidParameterError(f"h and a must have the same shape; got {h.shape} and {a.shape}.")
    keep = np.asarray(rule.keep)[a]
    flip = np.asarray(rule.flip)[a]
    thr = np.where(h == 1, keep, flip)
    s = rng.random(h.shape)
    return ((s <= thr) & (thr > 0)).astype(np.int8)


@dataclass(frozen=True)
class PrivateRates:
    """Step 1–2 of Algorithm 2: empirical rates ᾱ, β̄ and their Laplace-noised, clipped versions."""

    alpha_bar: float
    beta_bar: float
    alpha_tilde: float
    beta_tilde: float
    n0: int
    n1: int
    eps0: float
    eps1: float

    @property
    def events(self) -> list:
        """The two Laplace mechanisms as ``dp_accounting`` events (ε₀-DP and ε₁-DP)."""
        return [laplace_event(self.eps0), laplace_event(self.eps1)]


def private_group_rates(h: np.ndarray, a: np.ndarray, eps0: float, eps1: float, *,
                        rng: np.random.Generator) -> PrivateRates:
    """ᾱ = mean of h over A=0, β̄ over A=1, plus Lap(1/(n₀ε₀)), Lap(1/(n₁ε₁)), clipped to [0, 1].

    Spec: seed-003 §2.4 (corrected, P1).
    """
    for name, e in (("eps0", eps0), ("eps1", eps1)):
        if not e > 0:
            raise InvalidParameterError(f"{name} (Laplace budget) must be > 0; got {e}. The thesis uses 0.05 or 0.1.")
    h = np.asarray(h)
    a = np.asarray(a)
    n0, n1 = int(np.sum(a == 0)), int(np.sum(a == 1))
    if n0 == 0 or n1 == 0:
        raise InvalidParameterError(
            f"both groups must be present in the post-processing set; got n0={n0}, n1={n1}.")
    alpha_bar = float(h[a == 0].mean())
    beta_bar = float(h[a == 1].mean())
    l0 = rng.laplace(0.0, 1.0 / (n0 * eps0))
    l1 = rng.laplace(0.0, 1.0 / (n1 * eps1))
    return PrivateRates(alpha_bar, beta_bar, float(np.clip(alpha_bar + l0, 0, 1)),
                        float(np.clip(beta_bar + l1, 0, 1)), n0, n1, float(eps0), float(eps1))


def algorithm2(h: np.ndarray, a: np.ndarray, eps0: float, eps1: float, *,
               rng: np.random.Generator) -> tuple[FairRule, PrivateRates]:
    """Algorithm 2: private rates from (h, a) on the post-processing set, then the flip rule.

    ``h`` are the base classifier's predictions h_{ε,δ,a}(X_i) on the post-processing set. The
    result is (ε + ε₀ + ε₁, δ)-DP if h is (ε, δ)-DP (Theorem 8(a)). Spec: seed-003 §2.4.
    """
    rates = private_group_rates(h, a, eps0, eps1, rng=rng)
    return fair_rule(rates.alpha_tilde, rates.beta_tilde), rates


def proposition6_lower_bound(alpha: float, beta: float, gamma: float) -> float:
    """Proposition 6: any γ-SP post-processing has U ≥ |α − β| − γ. Spec: seed-003 §2.2."""
    return abs(alpha - beta) - gamma


def _check_sizes(n0: int, n1: int) -> None:
    if n0 < 1 or n1 < 1:
        raise InvalidParameterError(f"group sizes must be >= 1; got n0={n0}, n1={n1}.")


def theorem8_sp_bound(n0: int, n1: int, eps0: float, eps1: float, eta: float) -> float:
    """Theorem 8(b) (corrected: group-1 terms use n₁ = nθ̄): w.p. ≥ 1 − η,
    Δ_SP ≤ log(4/η)/(n₀ε₀) + log(4/η)/(n₁ε₁) + √(log(8/η)/(2n₀)) + √(log(8/η)/(2n₁)).

    The utility bound of Theorem 8(c) is U ≤ err* + (5/2)·(this). Spec: seed-003 §2.5, P1.
    """
    _check_sizes(n0, n1)
    if not 0 < eta < 1:
        raise InvalidParameterError(f"eta must lie in (0, 1); got {eta}.")
    return (math.log(4 / eta) / (n0 * eps0) + math.log(4 / eta) / (n1 * eps1)
            + math.sqrt(math.log(8 / eta) / (2 * n0)) + math.sqrt(math.log(8 / eta) / (2 * n1)))


def proposition9_sp_bound(n0: int, n1: int, eps0: float, eps1: float) -> float:
    """Proposition 9: E[Δ_SP] ≤ 1/(n₀ε₀) + 1/(n₁ε₁) + √(1/(4n₀)) + √(1/(4n₁)). Spec: seed-003 §2.6."""
    _check_sizes(n0, n1)
    return 1 / (n0 * eps0) + 1 / (n1 * eps1) + math.sqrt(1 / (4 * n0)) + math.sqrt(1 / (4 * n1))
