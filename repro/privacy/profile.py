"""Privacy profiles δ(ε) and trade-off curves (f-DP) of the accounted mechanisms (issue 38, item 1).

A mechanism's *privacy profile* is δ(ε) = sup over neighbours of the hockey-stick divergence
E_{e^ε}(P ‖ Q) (Balle, Barthe & Gaboardi 2018). Its *trade-off curve* is the least type-II error β of
any test "D vs D′" at type-I error α (Dong, Roth & Su 2022, Definition 2.1); for a symmetric profile the
two determine each other (Dong, Roth & Su 2022, Proposition 2.12):

    f(α) = sup_{ε ≥ 0} max(0, 1 − δ(ε) − e^ε·α, e^{−ε}·(1 − δ(ε) − α)).                       (1)

The sup over a finite ε grid is below the true f (every term is a valid lower bound), so a point
declared below the curve is below the true one too. A Gaussian mechanism with sensitivity/noise μ has
the closed form f(α) = Φ(Φ⁻¹(1 − α) − μ) (Dong, Roth & Su 2022, Equation 2.4).

Every profile here comes from the same accountant that calibrated the noise: ``dp_accounting``'s PLD for
DP-SGD, DP-FERMI ``strict-all`` and the Laplace step (:mod:`repro.privacy.accounting`), the exact strict
accountant for DP-FERMI ``strict`` (:mod:`repro.privacy.strict_accountant`), the Gaussian closed form
(Balle & Wang 2018, Theorem 8) for the tree mechanism and the rank noise, and the profile implied by a
single (ε, δ) claim (Kairouz, Oh & Viswanath 2015) for pure or point claims.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize, special

from repro.errors import InvalidParameterError

__all__ = ["PrivacyProfile", "gaussian_profile", "pld_profile", "strict_profile", "point_profile",
           "gaussian_tradeoff"]


@dataclass(frozen=True)
class PrivacyProfile:
    """δ(ε) of one accounted mechanism, ``how`` it was computed, and the trade-off curve (1) derived from it."""

    delta_at: Callable[[float], float] = field(repr=False)
    how: str
    #: the ε grid of the sup in (1); it should reach ε where δ(ε) is negligible
    eps_max: float = 12.0
    grid_size: int = 481

    def delta(self, eps: float | np.ndarray) -> np.ndarray:
        """δ(ε) on an array (clipped to [0, 1])."""
        e = np.atleast_1d(np.asarray(eps, dtype=float))
        return np.clip(np.array([self.delta_at(float(x)) for x in e]), 0.0, 1.0)

    def epsilon(self, delta: float) -> float:
        """The smallest ε ≥ 0 with δ(ε) ≤ ``delta`` (bisection of the non-increasing δ(ε); 0 if δ(0) ≤ δ)."""
        if not 0 <= delta < 1:
            raise InvalidParameterError(f"delta must lie in [0, 1); got {delta}")
        if self.delta_at(0.0) <= delta:
            return 0.0
        hi = 1.0
        while self.delta_at(hi) > delta:
            hi *= 2
            if hi > 1e4:
                return math.inf
        return float(optimize.brentq(lambda e: self.delta_at(e) - delta, 0.0, hi, xtol=1e-10, rtol=1e-10))

    def tradeoff(self, alpha: float | np.ndarray) -> np.ndarray:
        """f(α) by (1) on a grid of ``grid_size`` ε in [0, ``eps_max``] (a lower approximation of f)."""
        a = np.atleast_1d(np.asarray(alpha, dtype=float))[:, None]
        eps = np.linspace(0.0, self.eps_max, self.grid_size)[None, :]
        d = self.delta(eps[0])[None, :]
        f = np.maximum(1 - d - np.exp(eps) * a, np.exp(-eps) * (1 - d - a))
        return np.clip(f.max(axis=1), 0.0, 1.0)


def gaussian_tradeoff(alpha: float | np.ndarray, mu: float) -> np.ndarray:
    """f(α) = Φ(Φ⁻¹(1 − α) − μ) of the Gaussian shift with sensitivity/noise ratio μ (μ-GDP)."""
    a = np.asarray(alpha, dtype=float)
    return special.ndtr(special.ndtri(1 - a) - mu)


def _gaussian_delta(eps: float, mu: float) -> float:
    if mu <= 0:
        return 0.0
    return float(special.ndtr(-eps / mu + mu / 2) - math.exp(eps + special.log_ndtr(-eps / mu - mu / 2)))


def gaussian_profile(mu: float, how: str = "closed form: Gaussian shift (Balle & Wang 2018, Theorem 8)") \
        -> PrivacyProfile:
    """Profile of the Gaussian shift N(0, 1) vs N(μ, 1): δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)."""
    if not mu > 0:
        raise InvalidParameterError(f"mu must be > 0; got {mu}")
    return PrivacyProfile(lambda e: _gaussian_delta(e, mu), how, eps_max=max(12.0, mu * mu / 2 + 10 * mu))


def pld_profile(event, how: str = "PLD accountant (dp_accounting)") -> PrivacyProfile:
    """Profile of a ``dp_accounting`` event from the PLD accountant that calibrates the project's noise
    (:func:`repro.privacy.accounting.epsilon`; add/remove, both directions)."""
    from repro.privacy.accounting import _accountant

    acc = _accountant("pld")
    acc.compose(event)
    cache: dict[float, float] = {}

    def delta_at(e: float) -> float:
        if e not in cache:
            cache[e] = float(acc.get_delta(e))
        return cache[e]

    return PrivacyProfile(delta_at, how, grid_size=241)


def strict_profile(noise_multiplier: float, q: float, steps: int) -> PrivacyProfile:
    """Profile of DP-FERMI ``strict`` from the exact strict accountant: δ(ε) = Σ_K Bin(K; T, q)·δ_Gauss(ε; √K/z)."""
    from repro.privacy.strict_accountant import strict_delta

    return PrivacyProfile(lambda e: strict_delta(e, noise_multiplier, q, steps),
                          "exact strict accountant (Binomial mixture of Gaussian compositions)",
                          eps_max=max(12.0, steps / noise_multiplier**2 + 10 * math.sqrt(steps) / noise_multiplier))


def point_profile(epsilon: float, delta: float) -> PrivacyProfile:
    """The profile implied by an (ε, δ) claim alone (Kairouz, Oh & Viswanath 2015): its trade-off curve is
    f_{ε,δ}(α) = max(0, 1 − δ − e^ε α, e^{−ε}(1 − δ − α)), whose profile is
    δ(ε′) = δ + (1 − δ)(e^ε − e^{ε′})/(1 + e^ε) for ε′ < ε, and δ for ε′ ≥ ε."""
    if not epsilon >= 0 or not 0 <= delta < 1:
        raise InvalidParameterError(f"need epsilon >= 0 and delta in [0, 1); got {epsilon}, {delta}")

    def delta_at(e: float) -> float:
        if e >= epsilon:
            return delta
        return delta + (1 - delta) * (math.exp(epsilon) - math.exp(e)) / (1 + math.exp(epsilon))

    return PrivacyProfile(delta_at, f"the claim's (ε, δ) point ({epsilon:g}, {delta:g}) alone",
                          eps_max=max(epsilon, 1e-9), grid_size=2)
