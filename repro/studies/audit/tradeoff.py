"""The empirical trade-off of an attack and its verdict against a claimed privacy profile (issue 38, items 2–3).

The attack's scores on D (``out_d``) and D′ (``out_d1``) are split: the first ``select`` part of each side
chooses K thresholds and the sign of the test "sign·score > sign·t ⇒ D′", the rest evaluates them. At each
threshold t_k the test has type-I error α_k = P_D[reject] and type-II error β_k = P_D′[accept]; with
one-sided Clopper–Pearson upper bounds at level a/(2K) each (Bonferroni over the 2K rates), all
α_k ≤ α⁺_k and β_k ≤ β⁺_k hold together with probability ≥ 1 − a.

Verdict (item 3). Under the claim every test keeps β ≥ f(α), f the claimed trade-off curve
(:meth:`repro.privacy.profile.PrivacyProfile.tradeoff`), and f is non-increasing, so on the event above
β⁺_k < f(α⁺_k) ⇒ β_k < f(α_k): the claim is *violated* (with confidence 1 − a) when some upper corner
(α⁺_k, β⁺_k) lies below f (or, the claims being symmetric, (β⁺_k, α⁺_k) does).

Audited bound at δ. (ε, δ)-DP gives α + e^ε β ≥ 1 − δ and β + e^ε α ≥ 1 − δ, so on the same event

    ε_lb(δ) = max_k max(ln((1 − δ − α⁺_k)/β⁺_k), ln((1 − δ − β⁺_k)/α⁺_k), 0)                     (2)

holds for every δ at once; the audit reports it at the δ (of a grid fixed before evaluation) where
ε_lb(δ)/ε_claimed(δ) is largest: the δ where the audit has the most power.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from repro.errors import InvalidParameterError
from repro.privacy.profile import PrivacyProfile

__all__ = ["TradeoffAudit", "profile_audit", "upper_bounds", "epsilon_at"]

#: number of target δ (claimed ε(δ) = ε·i/N_TARGETS) whose best threshold is chosen on the selection runs
N_TARGETS = 12
#: extra thresholds at evenly spaced quantiles of the selection runs (the shape of the curve, for the picture)
N_SHAPE = 12


@dataclass(frozen=True)
class TradeoffAudit:
    """Empirical (type-I, type-II) points with simultaneous upper bounds, and the verdict over a profile."""

    alpha_hat: np.ndarray
    beta_hat: np.ndarray
    alpha_up: np.ndarray
    beta_up: np.ndarray
    violated: bool
    best_delta: float
    claimed_at_best: float
    audited_at_best: float
    confidence: float
    runs_evaluated: int

    @property
    def ratio_at_best(self) -> float:
        """audited / claimed ε at the best δ."""
        return self.audited_at_best / self.claimed_at_best if self.claimed_at_best > 0 else math.nan


def upper_bounds(k: np.ndarray, n: int, level: float) -> np.ndarray:
    """One-sided (1 − level) Clopper–Pearson upper bounds on binomial rates from counts ``k`` out of ``n``."""
    k = np.asarray(k, dtype=float)
    with np.errstate(invalid="ignore"):
        up = stats.beta.ppf(1 - level, k + 1, n - k)
    return np.where(k >= n, 1.0, up)


def epsilon_at(delta: float, alpha_up: np.ndarray, beta_up: np.ndarray) -> float:
    """ε_lb(δ) of (2) from upper bounds on the two error rates."""
    a, b = np.asarray(alpha_up, dtype=float), np.asarray(beta_up, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        c1 = np.where((1 - delta - a > 0) & (b > 0), np.log((1 - delta - a) / b), 0.0)
        c2 = np.where((1 - delta - b > 0) & (a > 0), np.log((1 - delta - b) / a), 0.0)
    return float(max(0.0, np.max(c1, initial=0.0), np.max(c2, initial=0.0)))


def _errors(out_d: np.ndarray, out_d1: np.ndarray, t: np.ndarray, sign: float) -> tuple[np.ndarray, np.ndarray]:
    """Counts of type-I errors (D rejected) and type-II errors (D′ accepted) at every threshold in ``t``."""
    a0, a1 = np.sort(sign * out_d), np.sort(sign * out_d1)
    st = sign * np.asarray(t, dtype=float)
    fp = a0.size - np.searchsorted(a0, st, side="right")
    fn = np.searchsorted(a1, st, side="right")
    return fp, fn


def _select(sel_d: np.ndarray, sel_d1: np.ndarray, n_eval: int, targets: list[float], deltas: np.ndarray,
            level: float, model: str | None) -> tuple[np.ndarray, float]:
    """Thresholds and sign from the selection runs: per target δ the one of largest expected (2) / ε(δ)
    at ``n_eval`` runs, plus :data:`N_SHAPE` quantiles. ``model`` fits a Gaussian or Laplace law per side."""
    sign = 1.0 if np.median(sel_d1) >= np.median(sel_d) else -1.0
    pooled = np.concatenate([sel_d, sel_d1])
    cand = np.quantile(pooled, np.linspace(0.0005, 0.9995, 400))
    if model is not None:
        dist = {"gaussian": stats.norm, "laplace": stats.laplace}.get(model)
        if dist is None:
            raise InvalidParameterError(f"model must be 'gaussian' or 'laplace'; got {model!r}")
        (l0, s0), (l1, s1) = dist.fit(sign * sel_d), dist.fit(sign * sel_d1)
        lo, hi = min(l0, l1) - 8 * max(s0, s1), max(l0, l1) + 8 * max(s0, s1)
        cand = sign * np.linspace(lo, hi, 800)
        a_rate, b_rate = dist.sf(sign * cand, l0, s0), dist.cdf(sign * cand, l1, s1)
    else:
        fp, fn = _errors(sel_d, sel_d1, cand, sign)
        a_rate, b_rate = fp / sel_d.size, fn / sel_d1.size
    a_up = upper_bounds(np.minimum(np.round(a_rate * n_eval), n_eval), n_eval, level)
    b_up = upper_bounds(np.minimum(np.round(b_rate * n_eval), n_eval), n_eval, level)
    chosen = []
    for eps_t, d in zip(targets, deltas, strict=True):
        with np.errstate(divide="ignore", invalid="ignore"):
            c1 = np.where((1 - d - a_up > 0) & (b_up > 0), np.log((1 - d - a_up) / b_up), 0.0)
            c2 = np.where((1 - d - b_up > 0) & (a_up > 0), np.log((1 - d - b_up) / a_up), 0.0)
        chosen.append(cand[int(np.argmax(np.maximum(c1, c2) / eps_t))])
    shape = np.quantile(pooled, np.linspace(0.04, 0.96, N_SHAPE))
    return np.r_[chosen, shape], sign


def profile_audit(out_d: np.ndarray, out_d1: np.ndarray, profile: PrivacyProfile, claimed_epsilon: float, *,
                  alpha: float = 0.05, select: float = 0.5, model: str | None = None) -> TradeoffAudit:
    """Empirical trade-off of the scores and its verdict against ``profile`` (module docstring).

    Target δ grid: δ_i = δ(ε_i) for ε_i = ``claimed_epsilon``·i/:data:`N_TARGETS`, fixed before any run
    is seen; K = N_TARGETS + N_SHAPE thresholds, chosen on the first ``select`` part of each side.
    """
    out_d, out_d1 = np.asarray(out_d, dtype=float), np.asarray(out_d1, dtype=float)
    if not 0 < select < 1:
        raise InvalidParameterError(f"select must lie in (0, 1); got {select}")
    h0, h1 = int(out_d.size * select), int(out_d1.size * select)
    sel_d, ev_d, sel_d1, ev_d1 = out_d[:h0], out_d[h0:], out_d1[:h1], out_d1[h1:]
    targets = [claimed_epsilon * i / N_TARGETS for i in range(1, N_TARGETS + 1)]
    deltas = profile.delta(np.array(targets))
    k = N_TARGETS + N_SHAPE
    level = alpha / (2 * k)
    thresholds, sign = _select(sel_d, sel_d1, min(ev_d.size, ev_d1.size), targets, deltas, level, model)
    fp, fn = _errors(ev_d, ev_d1, thresholds, sign)
    a_up, b_up = upper_bounds(fp, ev_d.size, level), upper_bounds(fn, ev_d1.size, level)
    f_a, f_b = profile.tradeoff(a_up), profile.tradeoff(b_up)
    violated = bool(np.any(b_up < f_a - 1e-12) or np.any(a_up < f_b - 1e-12))
    ratios = [epsilon_at(float(d), a_up, b_up) / e for e, d in zip(targets, deltas, strict=True)]
    i = int(np.argmax(np.array(ratios) + 1e-9 * np.arange(len(ratios))))   # ties: the larger ε
    return TradeoffAudit(fp / ev_d.size, fn / ev_d1.size, a_up, b_up, violated, float(deltas[i]), targets[i],
                         epsilon_at(float(deltas[i]), a_up, b_up), 1 - alpha, int(min(ev_d.size, ev_d1.size)))
