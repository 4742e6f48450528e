"""Algorithm 1 of Cummings et al. (2019): the exponential-mechanism fair learner, and its exact audit.

The data universe is finite: z = (x, a, y) with x ∈ {0, …, K−1}, a, y ∈ {0, 1}. A dataset is a count
array ``counts[x, a, y]`` (the order of records does not matter to Algorithm 1), a hypothesis class is
a value array ``hyp[h, x, a] = h(x, a) ∈ [0, 1]`` (randomized hypotheses allowed, DEC-5), and a
population is a probability array ``prob[x, a, y]``.

Algorithm 1 (spec §3.1), with ln(1/δ) = √n:

    Y ~ Lap(1/ε);  M = min_a |Z₁ₐ| + Y − √n/ε;  Δ = 2/(M − 1) + 1/n;
    output h with probability ∝ exp(−ε u(Z, h)/(2Δ)),  u = Γ^Z + err^Z,

and, when M ≤ 1 (Δ undefined; the paper is silent), a uniformly random h (DEC-4). Since M is never
released, the output distribution is a one-dimensional integral over Y:

    P_Z(h) = F(y₀)/|H| + ∫_{y₀}^{∞} Lap(y; 1/ε) softmax_h(−β(y) u(Z, ·)) dy,  y₀ = 1 − min_a|Z₁ₐ| + √n/ε,

with β(y) = ε/(2Δ(M(y))). We evaluate it by Gauss–Legendre quadrature after substituting the Laplace
CDF (w = e^{−ε|y|} on each side of the kink at y = 0), accumulating log-probabilities with
log-sum-exp so that tiny probabilities keep their relative accuracy; the quadrature error is
estimated by halving the number of nodes.

Spec: seed-000-002-compat.md §3.1–§3.4, §3.7, §8 (DEC-4, DEC-5, DEC-6, DEC-8, DEC-24, DEC-25).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from repro.errors import InvalidParameterError
from repro.privacy.guarantee import Guarantee, Label, Neighbouring

__all__ = [
    "guarantee",
    "ExactOutput",
    "threshold_class",
    "logistic_population",
    "sample_counts",
    "sample_scores",
    "population_scores",
    "exp_mech_probs",
    "alg1_sample",
    "alg1_output_distribution",
    "replace_one_neighbours",
    "hockey_stick",
    "max_log_ratio",
    "AuditResult",
    "audit_replace_one",
]


def guarantee(epsilon: float, n: int) -> Guarantee:
    """Theorem 2 of Cummings et al. (2019) for Algorithm 1 at ε: (2ε, δ)-DP with δ = e^{−√n}, replace one
    record (spec §3.1; checked exactly on small universes by :func:`audit_replace_one`)."""
    _check_eps(epsilon)
    return Guarantee(2 * epsilon, math.exp(-math.sqrt(n)), Label.ACCOUNTED, Neighbouring.REPLACE_ONE,
                     accountant="Theorem 2 (exponential mechanism with a private sensitivity bound)")


# --------------------------------------------------------------------------- data and hypotheses


def _check_counts(counts: np.ndarray) -> np.ndarray:
    counts = np.asarray(counts)
    if counts.ndim != 3 or counts.shape[1:] != (2, 2):
        raise InvalidParameterError(f"counts must have shape (K, 2, 2) indexed [x, a, y]; got {counts.shape}.")
    if np.any(counts < 0) or not np.all(np.equal(np.mod(counts, 1), 0)):
        raise InvalidParameterError("counts must be non-negative integers.")
    return counts.astype(np.int64)


def threshold_class(k: int) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """Group-specific thresholds h(x, a) = 1[x ≥ t_a], t_a ∈ {0, …, K}: |H| = (K+1)².

    Returns the value array ``hyp[h, x, a]`` and the thresholds (t₀, t₁) of each h. Spec: §6.
    """
    if k < 1:
        raise InvalidParameterError(f"the number of feature values K must be >= 1; got {k}.")
    ts = [(t0, t1) for t0 in range(k + 1) for t1 in range(k + 1)]
    x = np.arange(k)
    hyp = np.stack([np.stack([(x >= t0), (x >= t1)], axis=1) for t0, t1 in ts]).astype(float)
    return hyp, ts


def logistic_population(k: int, *, p_a: float = 0.3, w: float = 0.8, b: float = 0.5) -> np.ndarray:
    """Population prob[x, a, y]: x uniform on {0..K−1}, a ~ Bern(p_a), y ~ Bern(σ(w(x − (K−1)/2) + b·a)).

    Spec: §6 (suggested synthetic data-generating process).
    """
    if not 0 < p_a < 1:
        raise InvalidParameterError(f"p_a must lie in (0, 1); got {p_a}.")
    x = np.arange(k)[:, None]
    a = np.array([0.0, 1.0])[None, :]
    py1 = 1.0 / (1.0 + np.exp(-(w * (x - (k - 1) / 2.0) + b * a)))
    pa = np.array([1 - p_a, p_a])[None, :]
    prob = np.empty((k, 2, 2))
    prob[:, :, 1] = py1 * pa / k
    prob[:, :, 0] = (1 - py1) * pa / k
    return prob


def sample_counts(prob: np.ndarray, n: int, *, rng: np.random.Generator) -> np.ndarray:
    """Counts of n i.i.d. draws from ``prob`` (a multinomial over the 4K types)."""
    flat = np.asarray(prob, dtype=float).ravel()
    return rng.multinomial(n, flat / flat.sum()).reshape(np.shape(prob))


def _positive_counts(counts: np.ndarray) -> np.ndarray:
    return counts[:, :, 1].sum(axis=0)  # |Z₁₀|, |Z₁₁|


def sample_scores(counts: np.ndarray, hyp: np.ndarray, *, equalized_odds: bool = False) -> dict[str, np.ndarray]:
    """Γ^Z(h), err^Z(h) and u(Z, h) = Γ^Z + err^Z for every h (vectorized).

    Γ^Z = |γ^Z₁₀ − γ^Z₁₁| (true-positive rates, DEC-6) or, with ``equalized_odds``, max over y. An
    empty cell Z_ya contributes γ = 0 (Algorithm 1 assumes |Z₁ₐ| ≥ 2, Assumption 1).
    Spec: §1.1, §1.5, §3.1.
    """
    counts = _check_counts(counts)
    n = counts.sum()
    if n == 0:
        raise InvalidParameterError("the dataset is empty (n = 0).")
    err = (np.einsum("hxa,xa->h", hyp, counts[:, :, 0]) + np.einsum("hxa,xa->h", 1 - hyp, counts[:, :, 1])) / n
    gaps = []
    for y in ((0, 1) if equalized_odds else (1,)):
        size = counts[:, :, y].sum(axis=0)
        pos = np.einsum("hxa,xa->ha", hyp, counts[:, :, y])
        gamma = np.divide(pos, size, out=np.zeros_like(pos), where=size > 0)
        gaps.append(np.abs(gamma[:, 0] - gamma[:, 1]))
    gamma_gap = np.max(gaps, axis=0)
    return {"Gamma": gamma_gap, "err": err, "u": gamma_gap + err}


def population_scores(prob: np.ndarray, hyp: np.ndarray) -> dict[str, np.ndarray]:
    """Population Γ(h) (y = 1 only), err(h) and u(D, h) = Γ + err for every h. Spec: §1.1, §3.4 (E-8)."""
    prob = np.asarray(prob, dtype=float)
    err = np.einsum("hxa,xa->h", hyp, prob[:, :, 0]) + np.einsum("hxa,xa->h", 1 - hyp, prob[:, :, 1])
    p1a = prob[:, :, 1].sum(axis=0)
    gamma = np.einsum("hxa,xa->ha", hyp, prob[:, :, 1]) / p1a
    gap = np.abs(gamma[:, 0] - gamma[:, 1])
    return {"Gamma": gap, "err": err, "u": gap + err}


# --------------------------------------------------------------------------- the mechanism


def exp_mech_probs(scores: np.ndarray, epsilon: float, sensitivity: float) -> np.ndarray:
    """Exponential mechanism on a loss: Pr[h] ∝ exp(−ε·u(h)/(2Δ)), computed with log-sum-exp.

    Spec: §3.1 (footnote 3: loss-minimising form).
    """
    if not epsilon > 0 or not sensitivity > 0:
        raise InvalidParameterError(f"epsilon and sensitivity must be > 0; got {epsilon}, {sensitivity}.")
    logits = -epsilon * np.asarray(scores, dtype=float) / (2.0 * sensitivity)
    return np.exp(logits - logsumexp(logits))


def _check_eps(epsilon: float) -> None:
    if not epsilon > 0:
        raise InvalidParameterError(f"epsilon must be > 0; got {epsilon}. Pass e.g. epsilon=1.")


def alg1_sample(counts: np.ndarray, hyp: np.ndarray, epsilon: float, *, rng: np.random.Generator,
                scores: np.ndarray | None = None) -> int:
    """One run of Algorithm 1: the index of the output hypothesis (uniform fallback when M ≤ 1, DEC-4).

    ``scores`` may pass precomputed u(Z, ·). Spec: §3.1.
    """
    _check_eps(epsilon)
    counts = _check_counts(counts)
    n = int(counts.sum())
    u = sample_scores(counts, hyp)["u"] if scores is None else np.asarray(scores, dtype=float)
    m = _positive_counts(counts).min() + rng.laplace(0.0, 1.0 / epsilon) - math.sqrt(n) / epsilon
    if m <= 1:
        return int(rng.integers(len(u)))
    delta_sens = 2.0 / (m - 1.0) + 1.0 / n
    return int(rng.choice(len(u), p=exp_mech_probs(u, epsilon, delta_sens)))


@dataclass(frozen=True)
class ExactOutput:
    """Output distribution of Algorithm 1 on one dataset (numerically exact, see module docstring).

    Attributes
    ----------
    log_probs
        ln Pr[A(Z) = h] for every h.
    p_fallback
        Pr[M ≤ 1] = F_Lap(y₀), the probability of the uniform fallback (exact).
    quad_error
        max_h |ln P(h) − ln P_half(h)|, the change when the number of nodes is halved.
    """

    log_probs: np.ndarray
    p_fallback: float
    quad_error: float

    @property
    def probs(self) -> np.ndarray:
        return np.exp(self.log_probs)


def _laplace_cdf(y: float, epsilon: float) -> float:
    return 0.5 * math.exp(epsilon * y) if y < 0 else 1.0 - 0.5 * math.exp(-epsilon * y)


@functools.lru_cache(maxsize=8)
def _gauss_legendre(nodes: int) -> tuple[np.ndarray, np.ndarray]:
    return np.polynomial.legendre.leggauss(nodes)


#: Half-window (in units of 1/ε) integrated on each side of the Laplace kink; beyond it every
#: integrand is below e^{−WINDOW/2} of its value at the kink (see :func:`_log_output`).
WINDOW = 100.0
#: Width of one Gauss–Legendre panel, in units of 1/ε.
PANEL = 2.0


def _log_output(u: np.ndarray, c: int, n: int, epsilon: float, nodes: int) -> tuple[np.ndarray, float]:
    """ln P(h): composite Gauss–Legendre in y over a window around the kink y_k = max(y₀, 0).

    Why a window suffices: β(y) = ε/(2Δ) has slope ≤ ε/4 in y, and |u(h) − E_softmax u| ≤ 2, so
    d/dy ln softmax_h ∈ [−ε/2, ε/2], while d/dy ln Lap(y) = ±ε on either side of 0. Hence every
    integrand Lap·softmax_h decays at rate ≥ ε/2 away from y_k on both sides, and the truncated tails
    (and the fallback region y < y₀ on the left) carry a relative mass ≤ e^{−WINDOW/2} ≈ 2e−22 of
    each P(h); the fallback mass F(y₀)/|H| is nevertheless added exactly.
    """
    y0 = 1.0 - c + math.sqrt(n) / epsilon
    p_fb = _laplace_cdf(y0, epsilon)
    gx, gw = _gauss_legendre(nodes)
    kink = max(y0, 0.0)
    width = PANEL / epsilon
    n_right = int(math.ceil(WINDOW / PANEL))
    edges = [kink + width * np.arange(n_right + 1)]
    if y0 < 0:
        left = max(y0, -WINDOW / epsilon)
        n_left = max(1, int(math.ceil((0.0 - left) / width)))
        edges.append(np.linspace(left, 0.0, n_left + 1))
    ys, lws = [], []
    for e in edges:
        a, b = e[:-1, None], e[1:, None]
        half = 0.5 * (b - a)
        ys.append((a + half * (gx[None, :] + 1.0)).ravel())
        lws.append(np.log((half * gw[None, :]).ravel()))
    y = np.concatenate(ys)
    log_density = math.log(epsilon / 2.0) - epsilon * np.abs(y)
    lw = np.concatenate(lws) + log_density
    s = y - y0  # = M − 1 > 0
    beta = epsilon / (2.0 * (2.0 / s + 1.0 / n))  # ε/(2Δ)
    logits = -beta[:, None] * u[None, :]
    log_soft = logits - logsumexp(logits, axis=1, keepdims=True)
    log_int = logsumexp(lw[:, None] + log_soft, axis=0)
    if p_fb > 0:
        log_int = np.logaddexp(log_int, math.log(p_fb) - math.log(len(u)))
    return log_int, p_fb


def alg1_output_distribution(counts: np.ndarray, hyp: np.ndarray, epsilon: float, *, nodes: int = 12,
                             scores: np.ndarray | None = None, estimate_error: bool = True) -> ExactOutput:
    """Output distribution Pr[A(Z) = h] of Algorithm 1 on the dataset ``counts`` (DEC-4 fallback).

    ``nodes`` is the number of Gauss–Legendre nodes per panel of width 2/ε; ``scores`` may pass
    precomputed u(Z, ·). With ``estimate_error`` the result is recomputed with half the nodes and
    the largest change of a log-probability (and the log of the total mass) is reported.
    Spec: §3.7 (exact audit via 1-D quadrature).
    """
    _check_eps(epsilon)
    counts = _check_counts(counts)
    n = int(counts.sum())
    u = sample_scores(counts, hyp)["u"] if scores is None else np.asarray(scores, dtype=float)
    c = int(_positive_counts(counts).min())
    log_p, p_fb = _log_output(u, c, n, epsilon, nodes)
    total = float(logsumexp(log_p))
    err = abs(total)
    if estimate_error:
        log_half, _ = _log_output(u, c, n, epsilon, max(2, nodes // 2))
        err = max(err, float(np.max(np.abs(log_p - log_half))))
    # Renormalise away the (tiny) quadrature defect so the distribution sums to 1.
    return ExactOutput(log_probs=log_p - total, p_fallback=p_fb, quad_error=err)


# --------------------------------------------------------------------------- neighbours and divergences


def replace_one_neighbours(counts: np.ndarray) -> list[tuple[tuple[int, int, int], tuple[int, int, int], np.ndarray]]:
    """Every replace-one neighbour (DEC-24): remove one record of a present type, add one of another type.

    Returns (removed type, added type, neighbour counts) triples, types as (x, a, y).
    Spec: §1.2, §3.7.
    """
    counts = _check_counts(counts)
    types = [tuple(int(v) for v in t) for t in np.ndindex(counts.shape)]
    out = []
    for src in types:
        if counts[src] == 0:
            continue
        for dst in types:
            if dst == src:
                continue
            nb = counts.copy()
            nb[src] -= 1
            nb[dst] += 1
            out.append((src, dst, nb))
    return out


def hockey_stick(log_p: np.ndarray, log_q: np.ndarray, epsilon: float) -> float:
    """δ(ε) = Σ_h max(0, P(h) − e^ε Q(h)): the smallest δ with P(S) ≤ e^ε Q(S) + δ for all S.

    Spec: §3.7.
    """
    return float(np.sum(np.maximum(0.0, np.exp(log_p) - np.exp(epsilon + log_q))))


def max_log_ratio(log_p: np.ndarray, log_q: np.ndarray) -> float:
    """max_h |ln P(h) − ln Q(h)|: the realised pure-DP privacy loss of one neighbour pair. Spec: §3.7."""
    return float(np.max(np.abs(np.asarray(log_p) - np.asarray(log_q))))


@dataclass(frozen=True)
class AuditResult:
    """Exact replace-one privacy audit of Algorithm 1 at one dataset (spec §3.7).

    Attributes
    ----------
    base
        Output distribution on the dataset itself.
    realised_epsilon
        max over neighbours Z′ and h of |ln P_Z(h) − ln P_Z′(h)|.
    deltas
        {ε_tot: max over neighbours and both directions of the hockey-stick δ(ε_tot)}.
    rows
        One dict per neighbour: removed/added type, max log-ratio, δ at each ε_tot.
    quad_error
        Largest quadrature-error estimate over the base and every neighbour.
    """

    base: ExactOutput
    realised_epsilon: float
    deltas: dict[float, float]
    rows: list[dict[str, object]]
    quad_error: float


def audit_replace_one(counts: np.ndarray, hyp: np.ndarray, epsilon: float, eps_totals: tuple[float, ...], *,
                      nodes: int = 12) -> AuditResult:
    """Exact output distributions on ``counts`` and on every replace-one neighbour; privacy loss and δ.

    Spec: §3.7 (here over *all* replace-one neighbours of the dataset, not selected pairs).
    """
    base = alg1_output_distribution(counts, hyp, epsilon, nodes=nodes)
    worst = 0.0
    deltas = dict.fromkeys(eps_totals, 0.0)
    q_err = base.quad_error
    rows: list[dict[str, object]] = []
    for src, dst, nb in replace_one_neighbours(counts):
        out = alg1_output_distribution(nb, hyp, epsilon, nodes=nodes)
        q_err = max(q_err, out.quad_error)
        loss = max_log_ratio(base.log_probs, out.log_probs)
        worst = max(worst, loss)
        row: dict[str, object] = {"removed": "x{}a{}y{}".format(*src), "added": "x{}a{}y{}".format(*dst),
                                  "max_log_ratio": loss}
        for e in eps_totals:
            d = max(hockey_stick(base.log_probs, out.log_probs, e), hockey_stick(out.log_probs, base.log_probs, e))
            deltas[e] = max(deltas[e], d)
            row[f"delta_at_{e:g}"] = d
        rows.append(row)
    return AuditResult(base=base, realised_epsilon=worst, deltas=deltas, rows=rows, quad_error=q_err)
