"""Exact accounting of DP-FERMI ``strict`` (issue 21, item 2).

In ``strict`` each step adds Gaussian noise to a sum in which every *sampled* record enters with a
clipped part and every record enters with an unclipped part (its loss and W-norm part), so the usual
amplification by subsampling does not hold. Reveal to the adversary, at each step, whether the
differing record was sampled (post-processing of a more informative view, so the bound stays valid
for every unclipped part). Conditioned on that bit the step is, with probability q, a Gaussian
mechanism of sensitivity 1/z (noise multiplier z) and otherwise two identical outputs. Over T steps
the number K of steps in which the record was sampled is Binomial(T, q), and the composition of K
Gaussian mechanisms of sensitivity 1/z is a Gaussian mechanism of sensitivity √K/z, so

    δ(ε) = Σ_K Binom(K; T, q) · δ_Gauss(ε; √K / z),
    δ_Gauss(ε; μ) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)   (Balle & Wang 2018, Theorem 8).

This is the closed form; the same quantity is built as a privacy-loss distribution with
``dp_accounting`` in the tests. It is never larger than the q = 1 bound (T Gaussian mechanisms).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special, stats

from repro.errors import InvalidParameterError

__all__ = ["strict_delta", "strict_epsilon", "calibrate_strict_noise_multiplier"]


def _gauss_delta(eps: float, mu: np.ndarray) -> np.ndarray:
    """δ(ε) of the Gaussian mechanism with sensitivity/noise ratio ``mu`` (0 where mu = 0)."""
    mu = np.asarray(mu, dtype=float)
    out = np.zeros_like(mu)
    pos = mu > 0
    m = mu[pos]
    # e^ε Φ(b) computed as exp(ε + log Φ(b)) for stability at large ε
    out[pos] = special.ndtr(-eps / m + m / 2) - np.exp(eps + special.log_ndtr(-eps / m - m / 2))
    return np.clip(out, 0.0, 1.0)


def _check(noise_multiplier: float, q: float, steps: int) -> None:
    if not noise_multiplier > 0:
        raise InvalidParameterError(f"noise multiplier must be > 0; got {noise_multiplier}")
    if not 0 < q <= 1:
        raise InvalidParameterError(f"sampling probability q must lie in (0, 1]; got {q}")
    if int(steps) != steps or steps < 1:
        raise InvalidParameterError(f"steps must be a positive integer; got {steps}")


def strict_delta(epsilon: float, noise_multiplier: float, q: float, steps: int) -> float:
    """δ(ε) of ``steps`` strict steps at sampling rate ``q`` and noise multiplier ``noise_multiplier``."""
    _check(noise_multiplier, q, steps)
    k = np.arange(int(steps) + 1)
    weights = stats.binom.pmf(k, int(steps), q)
    keep = weights > 1e-300
    return float(np.sum(weights[keep] * _gauss_delta(epsilon, np.sqrt(k[keep]) / noise_multiplier)))


def strict_epsilon(noise_multiplier: float, q: float, steps: int, delta: float) -> float:
    """Smallest ε with :func:`strict_delta` ≤ ``delta`` (bisection on the monotone δ(ε))."""
    _check(noise_multiplier, q, steps)
    if not 0 < delta < 1:
        raise InvalidParameterError(f"delta must lie in (0, 1); got {delta}")
    if strict_delta(0.0, noise_multiplier, q, steps) <= delta:
        return 0.0
    hi = 1.0
    while strict_delta(hi, noise_multiplier, q, steps) > delta:
        hi *= 2
        if hi > 1e6:
            return math.inf
    return float(optimize.brentq(lambda e: strict_delta(e, noise_multiplier, q, steps) - delta,
                                 0.0, hi, xtol=1e-10, rtol=1e-10))


def calibrate_strict_noise_multiplier(target_epsilon: float, q: float, steps: int, delta: float) -> float:
    """Smallest noise multiplier z with :func:`strict_epsilon` ≤ ``target_epsilon``."""
    if not target_epsilon > 0 or not math.isfinite(target_epsilon):
        raise InvalidParameterError(f"target epsilon must be a positive finite number; got {target_epsilon}")
    _check(1.0, q, steps)

    def gap(z: float) -> float:
        return strict_delta(target_epsilon, z, q, steps) - delta

    lo, hi = 1e-3, 1.0
    while gap(hi) > 0:
        lo, hi = hi, hi * 2
        if hi > 1e7:
            raise InvalidParameterError(f"no noise multiplier reaches epsilon {target_epsilon} at delta {delta}")
    return float(optimize.brentq(gap, lo, hi, xtol=1e-8, rtol=1e-10))
