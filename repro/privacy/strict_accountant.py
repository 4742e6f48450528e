"""Exact accounting of DP-FERMI ``strict`` (issue 21, item 2; spec seed-004 §4.4 strict-DP mode).

Mechanism. At each of T steps a record is in the batch with probability q (Poisson); the noisy sum gets
each sampled record's s-dependent part (θ part clipped, W part bounded) and EVERY record's unclipped
non-sensitive part c (its loss and W-norm gradient, independent of s). The neighbouring relation is
replace-one sensitive attribute, so the record stays in the data and its sampling bit has the same law
under both neighbours; but c can tell the adversary whether it was sampled, so add/remove amplification
by subsampling does not apply (issue 14, defect 1).

Derivation. Reveal to the adversary, at each step, whether the record was sampled (a more informative
view; the true output is its post-processing, so the bound stays valid for every c). Given the bit the
step is, with probability q, the Gaussian mechanism N(c + a, σ²) vs N(c + b, σ²) whose joint (θ, W)
sensitivity/noise ratio is at most 1/z, i.e. dominated by N(0, 1) vs N(1/z, 1), and otherwise two
identical outputs. So one step is dominated by the pair

    P = (1 − q)·[0, ·] + q·[1, N(0, 1)],   Q = (1 − q)·[0, ·] + q·[1, N(1/z, 1)],

and dominating pairs compose under adaptivity (Zhu, Dong & Wang, AISTATS 2022, Theorem 10). Over T steps
the number K of sampled steps is Binomial(T, q), and K Gaussian mechanisms of ratio 1/z compose to one of
ratio √K / z (Dong, Roth & Su, JRSS-B 2022, Corollary 2), so

    δ(ε) = Σ_K Binom(K; T, q) · δ_Gauss(ε; √K / z),
    δ_Gauss(ε; μ) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2),

the exact hockey-stick divergence of N(0, 1) vs N(μ, 1) (Balle & Wang, "Improving the Gaussian mechanism
for differential privacy: analytical calibration and optimal denoising", ICML 2018, Theorem 8, with
Δ/σ = μ). The mixture over K is exact because the bit sequence has the same law under P and Q.

Checks (tests/privacy/test_strict_accountant.py): :func:`strict_pld` builds the same T-fold composition
as a privacy-loss distribution from the two per-step probability mass functions with ``dp_accounting``
and matches the closed form; the closed form never exceeds the q = 1 bound (T Gaussian compositions,
the accounting used before, kept only as a test helper); at q = 1 it is the Gaussian mechanism of ratio
√T / z; calibration inverts :func:`strict_epsilon`.

Caveat: P̂_S (the group proportions in the noise scale and the W sensitivity) is treated as public, so a
guarantee from this accountant carries the *public-statistics caveat*.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special, stats

from repro.errors import InvalidParameterError

__all__ = [
    "StrictEvent",
    "strict_delta",
    "strict_epsilon",
    "calibrate_strict_noise_multiplier",
    "strict_pld",
    "ACCOUNTANT_NAME",
]

#: What the results record as the accountant of a strict run.
ACCOUNTANT_NAME = "exact strict accountant (Binomial mixture of Gaussian mechanisms)"


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


@functools.lru_cache(maxsize=1024)
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


@functools.lru_cache(maxsize=256)
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


@dataclass(frozen=True)
class StrictEvent:
    """The privacy event of a ``strict`` run: T steps at Poisson rate q with noise multiplier z, accounted by
    :func:`strict_epsilon` (not a ``dp_accounting`` event: amplification by subsampling does not hold)."""

    noise_multiplier: float
    sampling_probability: float
    steps: int

    def epsilon(self, delta: float) -> float:
        """ε at ``delta`` (exact, module docstring)."""
        return strict_epsilon(float(self.noise_multiplier), float(self.sampling_probability), int(self.steps),
                              float(delta))


def strict_pld(noise_multiplier: float, q: float, steps: int, *, value_discretization_interval: float = 1e-3,
               output_bin: float = 1e-3, tail: float = 12.0):
    """The same T-fold composition as a ``dp_accounting`` privacy-loss distribution, built from the two
    per-step probability mass functions of the revealed pair (module docstring): outcome ``"out"`` with
    probability 1 − q on both sides, else the Gaussian output binned in width ``output_bin`` on
    [−``tail``, 1/z + ``tail``] (end bins take the tails). Binning is post-processing, so this PLD can only
    be below the exact one, by a discretisation error that shrinks with ``output_bin``; the PLD itself is
    pessimistic in its loss grid (``value_discretization_interval``). For tests and cross-checks."""
    from dp_accounting.pld import privacy_loss_distribution as pldlib

    _check(noise_multiplier, q, steps)
    mu = 1.0 / noise_multiplier
    edges = np.arange(-tail, mu + tail + output_bin, output_bin)
    edges[0], edges[-1] = -np.inf, np.inf
    log_p = _log_bin_masses(edges, 0.0)
    log_q = _log_bin_masses(edges, mu)
    lower = {i: float(v) + math.log(q) for i, v in enumerate(log_p)}
    upper = {i: float(v) + math.log(q) for i, v in enumerate(log_q)}
    if q < 1:
        lower["out"] = upper["out"] = math.log1p(-q)
    one = pldlib.from_two_probability_mass_functions(
        lower, upper, value_discretization_interval=value_discretization_interval)
    return one.self_compose(int(steps))


def _log_bin_masses(edges: np.ndarray, mean: float) -> np.ndarray:
    """log P(X ∈ bin) of X ~ N(mean, 1) for the bins between ``edges`` (stable in both tails)."""
    a, b = edges[:-1] - mean, edges[1:] - mean
    with np.errstate(divide="ignore"):
        return _log_bin_masses_ab(a, b)


def _log_bin_masses_ab(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # upper tail: log(Φ(-a) − Φ(-b)); lower tail: log(Φ(b) − Φ(a)); pick the side with mass away from 0
    lo = special.log_ndtr(b) + np.log1p(-np.exp(np.minimum(special.log_ndtr(a) - special.log_ndtr(b), -1e-300)))
    hi = special.log_ndtr(-a) + np.log1p(-np.exp(np.minimum(special.log_ndtr(-b) - special.log_ndtr(-a), -1e-300)))
    return np.where(a + b < 0, lo, hi)
