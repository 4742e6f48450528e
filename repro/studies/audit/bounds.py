"""Lower bounds on ε from attacks, and exact ε of known output laws (issue 14; issue 21, item 3).

Statistical audits. For neighbouring datasets D, D′ the mechanism runs many times on each; a
threshold test on a scalar statistic says "D′" when the statistic exceeds t. Any (ε, δ)-DP
mechanism satisfies FPR + e^ε·FNR ≥ 1 − δ and FNR + e^ε·FPR ≥ 1 − δ, so with one-sided
Clopper–Pearson upper bounds (level α/2 each) on both rates

    ε ≥ max(ln((1 − δ − FPR⁺)/FNR⁺), ln((1 − δ − FNR⁺)/FPR⁺))

holds with probability ≥ 1 − α (Jagielski, Ullman & Oprea 2020; Nasr et al. 2021). The threshold
must not depend on the runs it is evaluated on: either it is *planned* from the model of the
attack (:func:`planned_threshold`, every run evaluates), or it is selected on a first part of
the runs and evaluated on the rest (:func:`threshold_audit`).

Exact audits: where the output laws are computable the audited value is the smallest ε whose
hockey-stick divergence at the claimed δ is ≤ δ (:func:`exact_epsilon`); for Gaussian shifts the
closed form of Balle & Wang (2018, Theorem 8) (:func:`gaussian_epsilon`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy import optimize, special, stats

from repro.errors import InvalidParameterError

__all__ = ["clopper_pearson_upper", "epsilon_lower_bound", "threshold_audit", "planned_threshold",
           "exact_epsilon", "gaussian_delta", "gaussian_epsilon", "gaussian_mu", "gdp_mu_lower_bound"]


def clopper_pearson_upper(k: int, n: int, alpha: float) -> float:
    """One-sided (1 − α) Clopper–Pearson upper bound on a binomial rate from k successes in n trials."""
    if n < 1 or not 0 <= k <= n or not 0 < alpha < 1:
        raise InvalidParameterError(f"need 0 <= k <= n, n >= 1, alpha in (0, 1); got k={k}, n={n}, alpha={alpha}.")
    return 1.0 if k == n else float(stats.beta.ppf(1 - alpha, k + 1, n - k))


def epsilon_lower_bound(fp: int, fn: int, n0: int, n1: int, delta: float, alpha: float = 0.05) -> float:
    """ε lower bound from fp false positives in n0 runs on D and fn false negatives in n1 runs on D′.

    Each rate gets a (1 − α/2) Clopper–Pearson upper bound; returns 0 when the bounds certify nothing.
    """
    fpr, fnr = clopper_pearson_upper(fp, n0, alpha / 2), clopper_pearson_upper(fn, n1, alpha / 2)
    cands = [0.0]
    for a, b in ((fpr, fnr), (fnr, fpr)):
        if 1 - delta - a > 0 and b > 0:
            cands.append(math.log((1 - delta - a) / b))
    return max(cands)


def _rates(out_d: np.ndarray, out_d1: np.ndarray, t: float, sign: float) -> tuple[int, int]:
    return int(np.sum(sign * out_d > sign * t)), int(np.sum(sign * out_d1 <= sign * t))


def threshold_audit(out_d: np.ndarray, out_d1: np.ndarray, delta: float, alpha: float = 0.05, *,
                    threshold: tuple[float, float] | None = None, model: str | None = None,
                    select: float = 0.5) -> float:
    """ε lower bound of the test "sign·statistic > sign·t ⇒ D′".

    ``threshold = (t, sign)`` fixed in advance: every run is evaluated. Otherwise t and the sign are
    chosen on the first ``select`` part of the runs of each side and the bound is evaluated on the
    rest only, so the Clopper–Pearson bound stays valid: with ``model`` ("gaussian" or "laplace") a law
    of that family is fitted to each side's selection runs and t is planned from the fitted laws
    (:func:`planned_threshold`; stable, since a fit uses every selection run); without it t is the
    empirical best of 199 quantiles.
    """
    out_d, out_d1 = np.asarray(out_d, dtype=float), np.asarray(out_d1, dtype=float)
    if threshold is not None:
        fp, fn = _rates(out_d, out_d1, *threshold)
        return epsilon_lower_bound(fp, fn, out_d.size, out_d1.size, delta, alpha)
    if not 0 < select < 1:
        raise InvalidParameterError(f"select must lie in (0, 1); got {select}")
    h0, h1 = int(out_d.size * select), int(out_d1.size * select)
    sel_d, ev_d, sel_d1, ev_d1 = out_d[:h0], out_d[h0:], out_d1[:h1], out_d1[h1:]
    if model is not None:
        dist = {"gaussian": stats.norm, "laplace": stats.laplace}.get(model)
        if dist is None:
            raise InvalidParameterError(f"model must be 'gaussian' or 'laplace'; got {model!r}")
        sign = 1.0 if np.median(sel_d1) >= np.median(sel_d) else -1.0
        (l0, s0), (l1, s1) = dist.fit(sign * sel_d), dist.fit(sign * sel_d1)
        grid = (l0 + l1) / 2 + max(s0, s1) * np.linspace(0, 8, 400)
        t, _ = planned_threshold(lambda x: float(dist.sf(x, l0, s0)), lambda x: float(dist.sf(x, l1, s1)),
                                 grid, min(ev_d.size, ev_d1.size), delta, alpha)
        fp, fn = _rates(ev_d, ev_d1, sign * t, sign)
        return epsilon_lower_bound(fp, fn, ev_d.size, ev_d1.size, delta, alpha)
    grid = np.quantile(np.concatenate([sel_d, sel_d1]), np.linspace(0.005, 0.995, 199))
    best, choice = -1.0, (float(grid[0]), 1.0)
    for sgn in (1.0, -1.0):
        for t in grid:
            e = epsilon_lower_bound(*_rates(sel_d, sel_d1, t, sgn), sel_d.size, sel_d1.size, delta, alpha)
            if e > best:
                best, choice = e, (float(t), sgn)
    fp, fn = _rates(ev_d, ev_d1, *choice)
    return epsilon_lower_bound(fp, fn, ev_d.size, ev_d1.size, delta, alpha)


def planned_threshold(sf_d: Callable[[float], float], sf_d1: Callable[[float], float], grid: np.ndarray,
                      runs: int, delta: float, alpha: float = 0.05) -> tuple[float, float]:
    """The threshold t (sign +1) that maximises the bound expected from ``runs`` runs per side under a
    *model* of the statistic: ``sf_d(t)``, ``sf_d1(t)`` = P[statistic > t] on D and D′.

    The grid should lie above the midpoint of the two laws (the test "D′ has the larger statistic").
    """
    best, t_best = -1.0, float(grid[0])
    for t in grid:
        fp = min(runs, round(runs * sf_d(float(t))))
        fn = min(runs, round(runs * (1 - sf_d1(float(t)))))
        e = epsilon_lower_bound(fp, fn, runs, runs, delta, alpha)
        if e > best:
            best, t_best = e, float(t)
    return t_best, 1.0


def exact_epsilon(log_p: np.ndarray, log_q: np.ndarray, delta: float) -> float:
    """Smallest ε ≥ 0 with hockey-stick δ(ε) ≤ ``delta`` in both directions, for two output laws.

    δ = 0 gives the max log-ratio (pure DP; ∞ if the supports differ). Bisection to 1e-9.
    """
    log_p, log_q = np.asarray(log_p, dtype=float), np.asarray(log_q, dtype=float)
    p, q = np.exp(log_p), np.exp(log_q)

    def hs(e: float) -> float:
        return max(float(np.sum(np.maximum(0.0, p - math.exp(e) * q))),
                   float(np.sum(np.maximum(0.0, q - math.exp(e) * p))))

    with np.errstate(invalid="ignore"):
        hi = float(np.max(np.abs(np.where((p > 0) | (q > 0), log_p - log_q, 0.0))))
    if not math.isfinite(hi):
        hi = 1e3
    if hs(0.0) <= delta:
        return 0.0
    lo = 0.0
    while hi - lo > 1e-9:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if hs(mid) <= delta else (mid, hi)
    return hi


def gaussian_delta(epsilon: float, mu: float) -> float:
    """δ(ε) of the Gaussian shift N(0, 1) vs N(μ, 1) (Balle & Wang 2018, Theorem 8)."""
    if mu <= 0:
        return 0.0
    return float(special.ndtr(-epsilon / mu + mu / 2) - math.exp(epsilon + special.log_ndtr(-epsilon / mu - mu / 2)))


def gaussian_epsilon(mu: float, delta: float) -> float:
    """Exact ε at ``delta`` of the Gaussian shift with sensitivity/noise ratio ``mu`` (0 if δ(0) ≤ δ)."""
    if not 0 < delta < 1:
        raise InvalidParameterError(f"delta must lie in (0, 1); got {delta}")
    if gaussian_delta(0.0, mu) <= delta:
        return 0.0
    hi = 1.0
    while gaussian_delta(hi, mu) > delta:
        hi *= 2
    return float(optimize.brentq(lambda e: gaussian_delta(e, mu) - delta, 0.0, hi, xtol=1e-12, rtol=1e-12))


def gaussian_mu(epsilon: float, delta: float) -> float:
    """The μ whose Gaussian shift has exactly ε at δ (inverse of :func:`gaussian_epsilon`)."""
    if not epsilon > 0 or not 0 < delta < 1:
        raise InvalidParameterError(f"need epsilon > 0 and delta in (0, 1); got {epsilon}, {delta}")
    hi = 1.0
    while gaussian_delta(epsilon, hi) < delta:
        hi *= 2
    return float(optimize.brentq(lambda m: gaussian_delta(epsilon, m) - delta, 1e-9, hi, xtol=1e-13, rtol=1e-13))


def gdp_mu_lower_bound(alpha_up: np.ndarray, beta_up: np.ndarray) -> float:
    """Gaussian-DP μ lower bound from simultaneous upper bounds (α⁺, β⁺) on tests' type-I and type-II errors.

    A μ-GDP mechanism keeps every test above G_μ(α) = Φ(Φ⁻¹(1 − α) − μ) (Dong, Roth & Su 2022, Definition 2.7),
    which is non-increasing in α, so β ≤ β⁺ and α ≤ α⁺ give β⁺ ≥ G_μ(α⁺): μ ≥ Φ⁻¹(1 − α⁺) − Φ⁻¹(β⁺), and the
    same with the roles swapped (the claims are symmetric). 0 when nothing is certified.
    """
    a = np.clip(np.asarray(alpha_up, dtype=float), 0.0, 1.0)
    b = np.clip(np.asarray(beta_up, dtype=float), 0.0, 1.0)
    with np.errstate(invalid="ignore"):
        cands = np.r_[special.ndtri(1 - a) - special.ndtri(b), special.ndtri(1 - b) - special.ndtri(a)]
    cands = cands[np.isfinite(cands)]
    return float(max(0.0, np.max(cands, initial=0.0)))
