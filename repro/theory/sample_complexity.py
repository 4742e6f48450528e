"""Bound calculators for Cummings et al. (2019): Theorem 2 (Algorithm 1) and Theorem 3 (Algorithm 3).

Theorem 2 is implicit in n (n appears on both sides, through δ = e^{−√n} and |Z₁ₐ|). We evaluate it
in two forms (spec §3.6):

- ``"printed"`` [P]: the theorem's display as printed, with |Z₁ₐ| → P_min·n and k = P_min (DEC-7),
  including its errata (E-7: 2/(kε)² instead of 4/(kε)²; E-11: the inverted third term
  (√n + ln|H|)/n; the constant 144 in the second term, where the proof gives 6).
- ``"corrected"`` [X] (ours, not the paper's): the conditions that follow from the proof's inequality
  (1): n ≥ 144L/(α²P_min), n ≥ 6L(2n/den + 1)/(εα), √n ≥ ln(20/β), n > 4/(P_min ε)², den > 1, with
  L = ln(20|H|/β) and den(n) = P_min·n − √n/ε − 1.

For Theorem 3 (Private-FairNR) the paper's parameter formulas (T, m, ε′, the regret terms γ_L, γ_A, η
and the sample-size condition Eq. (2)) are evaluated as printed (spec §5.4–§5.6), with the choices
DEC-16 (c₀ = 1, d = 1), DEC-20 (C = 1/α) and DEC-21 (δ inside γ_A read as β).

Spec: seed-000-002-compat.md §3.5, §3.6, §4.3, §5.4–§5.6, §8 (DEC-7, DEC-16, DEC-20, DEC-21, DEC-23).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from repro.errors import InvalidParameterError

__all__ = [
    "VARIANTS",
    "Thm2Params",
    "thm2_log_term",
    "thm2_den",
    "thm2_printed_rhs",
    "thm2_holds",
    "thm2_min_n",
    "thm2_alpha_at_n",
    "alg3_paper_T",
    "alg3_paper_m",
    "alg3_paper_eps_prime",
    "alg3_gamma_L",
    "alg3_gamma_A",
    "alg3_eta",
    "alg3_eq2_sides",
    "alg3_eq2_min_n",
    "advanced_composition_epsilon",
    "lemma4_total_epsilon",
]

VARIANTS = ("printed", "corrected")


@dataclass(frozen=True)
class Thm2Params:
    """Parameters of Theorem 2 other than n.

    Parameters
    ----------
    epsilon
        Privacy parameter ε of Algorithm 1 (the theorem claims (2ε, e^{−√n})-DP).
    alpha, beta
        Accuracy α (excess of Γ + err over OPT) and failure probability β.
    p_min
        P_min = min_a P₁ₐ; also used for |Z₁ₐ| ≈ P_min·n and for k (DEC-7, DEC-8).
    h_size
        |H|, the size of the finite hypothesis class.
    """

    epsilon: float
    alpha: float
    beta: float
    p_min: float
    h_size: float

    def __post_init__(self) -> None:
        if not self.epsilon > 0:
            raise InvalidParameterError(f"epsilon must be > 0; got {self.epsilon}. Pass e.g. epsilon=1.")
        if not self.alpha > 0:
            raise InvalidParameterError(f"alpha must be > 0; got {self.alpha}. Pass e.g. alpha=0.1.")
        if not 0 < self.beta < 1:
            raise InvalidParameterError(f"beta must lie in (0, 1); got {self.beta}. Pass e.g. beta=0.05.")
        if not 0 < self.p_min <= 0.5:
            raise InvalidParameterError(
                f"p_min = min_a P[y=1, a] must lie in (0, 1/2]; got {self.p_min}. Pass e.g. p_min=0.25."
            )
        if not self.h_size >= 1:
            raise InvalidParameterError(f"h_size = |H| must be >= 1; got {self.h_size}.")


def _check_variant(variant: str) -> None:
    if variant not in VARIANTS:
        raise InvalidParameterError(f"variant must be one of {VARIANTS}; got {variant!r}.")


def thm2_log_term(p: Thm2Params) -> float:
    """L = ln|H| + ln(1/β) + ln 20 = ln(20|H|/β).

    Spec: §3.6.
    """
    return math.log(p.h_size) + math.log(1.0 / p.beta) + math.log(20.0)


def thm2_den(n: float, p: Thm2Params) -> float:
    """den(n) = P_min·n − √n/ε − 1: the bias-corrected positive count minus one, |Z₁ₐ| → P_min·n.

    Spec: §3.6 (the denominator of the second term; ln(1/δ) = √n).
    """
    return p.p_min * n - math.sqrt(n) / p.epsilon - 1.0


def thm2_printed_rhs(n: float, p: Thm2Params) -> float:
    """Right-hand side R_lit(n) of Theorem 2 as printed [P]; +inf where den(n) ≤ 0.

    R_lit(n) = max(144 L · max(1/(α² P_min), (2n/den + 1)/(εα), (√n + ln|H|)/n), 2/(P_min ε)²).

    Spec: §3.5 (theorem display), §3.6 (computable form).
    """
    den = thm2_den(n, p)
    if den <= 0:
        return math.inf
    big_l = thm2_log_term(p)
    inner = max(
        1.0 / (p.alpha**2 * p.p_min),
        (2.0 * n / den + 1.0) / (p.epsilon * p.alpha),
        (math.sqrt(n) + math.log(p.h_size)) / n,
    )
    return max(144.0 * big_l * inner, 2.0 / (p.p_min * p.epsilon) ** 2)


def thm2_holds(n: float, p: Thm2Params, variant: str = "corrected") -> bool:
    """True if n samples satisfy Theorem 2's sample-size condition (``printed`` [P] or ``corrected`` [X]).

    Spec: §3.6.
    """
    _check_variant(variant)
    if variant == "printed":
        return n >= thm2_printed_rhs(n, p)
    den = thm2_den(n, p)
    if den <= 1:
        return False
    big_l = thm2_log_term(p)
    return (
        n >= 144.0 * big_l / (p.alpha**2 * p.p_min)
        and n >= 6.0 * big_l * (2.0 * n / den + 1.0) / (p.epsilon * p.alpha)
        and math.sqrt(n) >= math.log(20.0 / p.beta)
        and _above_side_bound(n, p)
    )


def _above_side_bound(n: float, p: Thm2Params) -> bool:
    """n > 4/(P_min ε)² (E-7), with a relative guard so that rounding cannot admit the boundary itself."""
    return n * (p.p_min * p.epsilon) ** 2 > 4.0 * (1.0 + 1e-12)


def _first_positive_den(p: Thm2Params, floor: float) -> int:
    """Smallest integer n with den(n) > floor (closed form in √n, then an integer fix-up)."""
    # P s² − s/ε − (1 + floor) > 0 with s = √n: s > (1/ε + √(1/ε² + 4P(1+floor)))/(2P).
    s = (1.0 / p.epsilon + math.sqrt(1.0 / p.epsilon**2 + 4.0 * p.p_min * (1.0 + floor))) / (2.0 * p.p_min)
    n = max(1, math.floor(s * s) - 2)
    while thm2_den(n, p) <= floor:
        n += 1
    return n


def thm2_min_n(p: Thm2Params, variant: str = "corrected", *, n_max: float = 1e18) -> int | None:
    """Smallest integer n for which Theorem 2's condition holds; None if none up to ``n_max``.

    Once den(n) > 0 every right-hand side is non-increasing in n (2n/den and (√n + ln|H|)/n
    decrease), so n − RHS(n) is increasing and the set of admissible n is an interval [n*, ∞): we
    start at the first n with den > 0 (den > 1 for ``corrected``), double until admissible, then
    bisect over integers.

    Spec: §3.6 ("doubling followed by bisection ... scan upward from the first feasible n").
    """
    _check_variant(variant)
    lo = _first_positive_den(p, 0.0 if variant == "printed" else 1.0)
    if thm2_holds(lo, p, variant):
        return lo
    hi = lo
    while not thm2_holds(hi, p, variant):
        hi *= 2
        if hi > n_max:
            return None
    while hi - lo > 1:  # invariant: lo fails, hi holds
        mid = (lo + hi) // 2
        if thm2_holds(mid, p, variant):
            hi = mid
        else:
            lo = mid
    return hi


def thm2_alpha_at_n(n: float, p: Thm2Params, variant: str = "corrected") -> float:
    """Guaranteed α at sample size n (the inverse of Theorem 2); +inf if a side condition fails.

    α(n) = max(√(144L/(n P_min)), c·L(2n/den + 1)/(εn)), c = 144 (``printed``) or 6 (``corrected``),
    subject to the α-free side conditions (printed: den > 0, n ≥ 2/(P_min ε)², n ≥ 144L(√n + ln|H|)/n;
    corrected: den > 1, √n ≥ ln(20/β), n > 4/(P_min ε)²). ``p.alpha`` is ignored.

    Spec: §3.6 ("Inverse").
    """
    _check_variant(variant)
    big_l = thm2_log_term(p)
    den = thm2_den(n, p)
    if variant == "printed":
        ok = den > 0 and n >= 2.0 / (p.p_min * p.epsilon) ** 2 and n >= 144.0 * big_l * (
            math.sqrt(n) + math.log(p.h_size)) / n
        c = 144.0
    else:
        ok = den > 1 and math.sqrt(n) >= math.log(20.0 / p.beta) and _above_side_bound(n, p)
        c = 6.0
    if not ok:
        return math.inf
    return max(math.sqrt(144.0 * big_l / (n * p.p_min)), c * big_l * (2.0 * n / den + 1.0) / (p.epsilon * n))


# --------------------------------------------------------------------------- Theorem 3 / Algorithm 3


def alg3_paper_T(n: float, alpha: float, beta: float) -> float:
    """Number of rounds T = 4√n ln(2/β)/α⁴ of Algorithm 3 as printed [P].

    Spec: §5.4.
    """
    return 4.0 * math.sqrt(n) * math.log(2.0 / beta) / alpha**4


def alg3_paper_m(n: float, alpha: float, beta: float, *, c0: float = 1.0, d: float = 1.0,
                 C: float | None = None) -> float:
    """Learner samples (CSC calls) per round m of Algorithm 3 as printed [P], with T = :func:`alg3_paper_T`.

    m = ln(2T/β)·d·ln(n)·C²·c₀·T / (√n (1+C)² ln(2/β)), C = 1/α by default (DEC-20).

    Spec: §5.4.
    """
    C = 1.0 / alpha if C is None else C
    T = alg3_paper_T(n, alpha, beta)
    return math.log(2.0 * T / beta) * d * math.log(n) * C**2 * c0 * T / (
        math.sqrt(n) * (1.0 + C) ** 2 * math.log(2.0 / beta))


def alg3_paper_eps_prime(n: float, epsilon: float, delta: float, T: float, m: float, C: float) -> float:
    """Per-coordinate Laplace parameter ε′ = ε / (((2+C)/n)·√(mT ln(1/δ))) of Algorithm 3 as printed [P].

    The noise is Lap(1/ε′). Spec: §5.4, Lemma 4 (§4.3).
    """
    return epsilon / (((2.0 + C) / n) * math.sqrt(m * T * math.log(1.0 / delta)))


def alg3_gamma_L(n: float, epsilon: float, delta: float, T: float, m: float, C: float) -> float:
    """Additive part of the learner's average regret as printed [P]: 2(1 + ln n)(2+C)√(m ln(1/δ))/(ε√T).

    (The multiplicative ε·OPT/(T√(mT ln(1/δ))) part is below 1/T and omitted.) Spec: §5.5, §5.6.
    """
    return 2.0 * (1.0 + math.log(n)) * (2.0 + C) * math.sqrt(m * math.log(1.0 / delta)) / (epsilon * math.sqrt(T))


def alg3_gamma_A(n: float, T: float, m: float, C: float, beta: float, *, c0: float = 1.0, d: float = 1.0) -> float:
    """Auditor's regret as printed [P]: √(c₀C²(ln(2T/β) + d ln n)/m) (δ read as β, DEC-21).

    Spec: §5.5.
    """
    return math.sqrt(c0 * C**2 * (math.log(2.0 * T / beta) + d * math.log(n)) / m)


def alg3_eta(n: float, epsilon: float, delta: float, T: float, m: float, C: float, beta: float, *,
             c0: float = 1.0, d: float = 1.0) -> float:
    """Equilibrium accuracy η = γ_A + γ_L + √(c₀C²(ln(2/β) + d ln n)/m) as printed [P] (needs η ≤ α).

    Spec: §5.5.
    """
    gen = math.sqrt(c0 * C**2 * (math.log(2.0 / beta) + d * math.log(n)) / m)
    return alg3_gamma_A(n, T, m, C, beta, c0=c0, d=d) + alg3_gamma_L(n, epsilon, delta, T, m, C) + gen


def alg3_eq2_sides(n: float, alpha: float, beta: float, epsilon: float, delta: float, *,
                   c0: float = 1.0, d: float = 1.0) -> tuple[float, float]:
    """Both sides of the paper's privacy/sample condition Eq. (2) [P], with T = :func:`alg3_paper_T`.

    lhs = ε/√(ln(1/δ)); rhs = 24√(ln(2T/β)·d·ln n·c₀·(1 + ln n)) / (α²√(√n ln(2/β))). Eq. (2) holds
    iff lhs ≥ rhs. Spec: §5.5, §5.6.
    """
    T = alg3_paper_T(n, alpha, beta)
    lhs = epsilon / math.sqrt(math.log(1.0 / delta))
    rhs = 24.0 * math.sqrt(math.log(2.0 * T / beta) * d * math.log(n) * c0 * (1.0 + math.log(n))) / (
        alpha**2 * math.sqrt(math.sqrt(n) * math.log(2.0 / beta)))
    return lhs, rhs


def alg3_eq2_min_n(alpha: float, beta: float, epsilon: float, delta: float, *, c0: float = 1.0,
                   d: float = 1.0, n_max: float = 1e60) -> float | None:
    """Smallest n (to 0.1 % by geometric bisection) at which Eq. (2) holds; None if beyond ``n_max``.

    Spec: §5.6 ("n_min for Eq. (2) by geometric bisection").
    """
    def ok(n: float) -> bool:
        lhs, rhs = alg3_eq2_sides(n, alpha, beta, epsilon, delta, c0=c0, d=d)
        return lhs >= rhs

    return _geometric_bisect(ok, 10.0, n_max)


def _geometric_bisect(ok: Callable[[float], bool], lo: float, hi: float) -> float | None:
    if ok(lo):
        return lo
    if not ok(hi):
        return None
    while hi / lo > 1.001:
        mid = math.sqrt(lo * hi)
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def advanced_composition_epsilon(eps_step: float, k: int, delta_prime: float) -> float:
    """ε′ = ε√(2k ln(1/δ′)) + kε(e^ε − 1): k-fold advanced composition (Dwork–Rothblum–Vadhan).

    Spec: §1.7 (Thm 6).
    """
    return eps_step * math.sqrt(2.0 * k * math.log(1.0 / delta_prime)) + k * eps_step * math.expm1(eps_step)


def lemma4_total_epsilon(epsilon: float, k: int, delta: float) -> float:
    """Total ε that advanced composition actually gives for Lemma 4's per-step ε/√(k ln(1/δ)) (δ′ = δ).

    The paper claims ε; without the √8 this is ≈ √2·ε (E-12a, DEC-23). Spec: §4.3.
    """
    return advanced_composition_epsilon(epsilon / math.sqrt(k * math.log(1.0 / delta)), k, delta)
