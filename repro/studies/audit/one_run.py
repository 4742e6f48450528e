"""Privacy auditing with one training run (Steinke, Nasr & Jagielski, NeurIPS 2023), white-box, at a shipped
configuration.

m canaries are each put into the training data independently with probability 1/2 (S_i ∈ {in, out}); one
training run is made; the auditor scores every canary, guesses "in" for the k₊ highest scores and "out" for the
k₋ lowest (abstaining on the rest) and counts its v correct guesses out of r = k₊ + k₋. If the run is (ε, δ)-DP
with respect to each canary (add/remove), then (their Corollary 5.4, stated as a fact; our implementation)

    P[≥ v correct] ≤ p(ε, δ) = P[Bin(r, q_ε) ≥ v] + 2mδ · max_{1 ≤ i ≤ v} P[v − i ≤ Bin(r, q_ε) < v] / i,
    q_ε = e^ε/(1 + e^ε),

so ε_lb = sup{ε : p(ε, δ) < level} is a 1 − level lower bound (:func:`epsilon_lower_bound`). The guess counts
are fixed before the run: a grid of :data:`GUESS_FRACTIONS` of m, each tested at level/len(grid) (Bonferroni),
so the reported maximum over the grid keeps its level.

:func:`one_run_shipped` is the white-box version at a shipped subsampled configuration (the design of
:mod:`repro.studies.audit.subsampled`): the canaries are m of the records of **one** trial drawn by the learner
unit (its batches and its noise); a canary's gradient is C along its own direction, so its score is statistic
(1) of that module on its own coordinate (the released sums' coordinates carry independent noise). An "out"
canary contributes no gradient, so its coordinate is noise alone.

``repro run ID --audit`` runs it on a finished result's cells (:mod:`repro.studies.audit.run_audit`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

from repro.errors import InvalidParameterError
from repro.learners.unit import Configured
from repro.studies.audit import subsampled as sub

__all__ = ["p_value", "epsilon_lower_bound", "guess_audit", "OneRunResult", "one_run_shipped", "one_run_configured",
           "GUESS_FRACTIONS"]

#: the guess counts k₊ = k₋ = f·m tried, fixed before the run (Bonferroni over them)
GUESS_FRACTIONS = (0.005, 0.01, 0.02, 0.05, 0.1)


def p_value(m: int, r: int, v: int, epsilon: float, delta: float) -> float:
    """p(ε, δ) of v or more correct guesses out of r, with m canaries, under (ε, δ)-DP (module docstring)."""
    if not 0 <= v <= r <= m or epsilon < 0 or not 0 <= delta <= 1:
        raise InvalidParameterError(f"need 0 <= v <= r <= m, epsilon >= 0, 0 <= delta <= 1; got m={m}, r={r}, "
                                    f"v={v}, epsilon={epsilon}, delta={delta}.")
    q = 1.0 / (1.0 + math.exp(-epsilon))
    beta = float(stats.binom.sf(v - 1, r, q))
    if delta == 0 or v == 0:
        return min(beta, 1.0)
    i = np.arange(1, v + 1)
    window = stats.binom.cdf(v - 1, r, q) - stats.binom.cdf(v - i - 1, r, q)    # P[v − i ≤ Bin < v]
    return float(min(beta + 2 * m * delta * np.max(window / i), 1.0))


def epsilon_lower_bound(m: int, r: int, v: int, delta: float, level: float = 0.05) -> float:
    """The largest ε whose p-value is below ``level`` (0 when even ε = 0 is not rejected)."""
    if not 0 < level < 1:
        raise InvalidParameterError(f"level must lie in (0, 1); got {level}.")
    if p_value(m, r, v, 0.0, delta) >= level:
        return 0.0
    hi = 1.0
    while p_value(m, r, v, hi, delta) < level:
        hi *= 2
        if hi > 1e3:
            return math.inf
    return float(optimize.brentq(lambda e: p_value(m, r, v, e, delta) - level, 0.0, hi, xtol=1e-6))


def guess_audit(scores: np.ndarray, included: np.ndarray, delta: float, level: float = 0.05,
                fractions: tuple[float, ...] = GUESS_FRACTIONS) -> tuple[float, int, int]:
    """(ε_lb, r, v) of the best guess count of ``fractions`` (each at level/len(fractions)): guess "in" for the
    k highest ``scores`` and "out" for the k lowest, k = f·m."""
    scores, included = np.asarray(scores, dtype=float), np.asarray(included, dtype=bool)
    m = scores.size
    order = np.argsort(scores, kind="stable")
    best = (0.0, 0, 0)
    for f in fractions:
        k = max(1, int(f * m))
        if 2 * k > m:
            continue
        v = int(np.count_nonzero(included[order[-k:]]) + np.count_nonzero(~included[order[:k]]))
        e = epsilon_lower_bound(m, 2 * k, v, delta, level / len(fractions))
        if e > best[0]:
            best = (e, 2 * k, v)
    return best


@dataclass(frozen=True)
class OneRunResult:
    """One audited run: the claim, the canaries and the bound."""

    mechanism: str
    claimed_epsilon: float
    delta: float
    canaries: int
    guesses: int
    correct: int
    audited_epsilon: float
    level: float

    @property
    def ratio(self) -> float:
        return self.audited_epsilon / self.claimed_epsilon


def one_run_shipped(name: str, canaries: int, rng: np.random.Generator, *, ship: sub.Shipped | None = None,
                    level: float = 0.05) -> OneRunResult:
    """The one-run audit of ``name`` (a shipped audit of :mod:`repro.studies.audit.subsampled`: DP-SGD,
    DP-FERMI ``strict-all``, or a baseline's DP-SGD steps) at its shipped configuration
    (:func:`one_run_configured` of the unit's ``configure`` at ``ship``)."""
    ship = ship or sub._SHIPS[name]
    return one_run_configured(name, sub._configure(name, ship), canaries, rng, level=level)


def one_run_configured(name: str, run: Configured, canaries: int, rng: np.random.Generator, *,
                       level: float = 0.05) -> OneRunResult:
    """The one-run audit of a unit's configured run (its :class:`~repro.learners.unit.Configured`: the
    configuration, the claim, (q, T) and n), drawn as the shipped audit ``name`` draws it: ``canaries`` of the
    records of one trial drawn by the learner unit, each in with probability 1/2, scored by statistic (1) of
    :mod:`repro.studies.audit.subsampled`."""
    n, claim, q, steps = run.n, run.guarantee, run.sampling_probability, run.steps
    if canaries > n:
        raise InvalidParameterError(f"canaries must be <= n = {n}; got {canaries}.")
    z, clip = run.config.noise_multiplier, run.config.clip_norm
    drawn = sub._DRAWS.get(name, sub._draw_core)(run, n, rng)
    if len(drawn.batches) != steps:
        raise InvalidParameterError(f"the learner drew {len(drawn.batches)} steps; the claim is for {steps}.")
    ratio = drawn.noise_std / (z * clip)   # over the accountant's assumption, not the engine's noise function
    included = rng.random(canaries) < 0.5
    mu = 1.0 / z
    score = np.zeros(canaries)
    for t in range(steps):
        hit = np.zeros(canaries, dtype=bool)
        b = drawn.batches[t]
        hit[b[b < canaries]] = True
        v = ratio * rng.standard_normal(canaries) + (hit & included) * mu
        score += sub.mixture_llr(v, mu, q)
    eps, r, correct = guess_audit(score, included, claim.delta, level)
    return OneRunResult(name, claim.epsilon, claim.delta, canaries, r, correct, eps, level)
