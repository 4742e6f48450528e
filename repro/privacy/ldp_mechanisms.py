"""Local differential privacy mechanisms on a categorical attribute, as exact transition matrices.

A mechanism on k values is a row-stochastic matrix ``Q`` with ``Q[a, z] = Pr(Z = z | A = a)``;
it is ε-LDP iff for every output z, max_a Q[a, z] ≤ e^ε min_a Q[a, z].

Mechanisms: generalized randomized response (GRR), Subset Selection (SS; its output is a subset,
encoded multi-hot), the optimal binary mechanism of Theorem 14 and the optimal non-binary
mechanism of problem (5.5.9), solved globally by bisection on the objective with a linear-
programming feasibility check (scipy HiGHS).

Spec: ../shared/specs/seed-003-thesis.md §5.1 (GRR), §5.2 (SS), §5.4 (Theorem 14), §5.5 (5.5.9).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from repro.errors import InvalidParameterError
from repro.privacy.guarantee import Guarantee, Label, Neighbouring

__all__ = [
    "guarantee",
    "OptimalMechanism",
    "grr_matrix",
    "ldp_epsilon",
    "nonbinary_constraint_violation",
    "optimal_binary_matrix",
    "optimal_nonbinary_matrix",
    "perturb",
    "ss_inclusion_matrix",
    "ss_keep_probability",
    "ss_subset_size",
    "subset_selection",
    "subset_selection_matrix",
    "zeta_min",
]


def guarantee(epsilon: float, *, statistics: str = "") -> Guarantee:
    """An ε-LDP perturbation matrix (each user's report; exact: :func:`ldp_epsilon` is the matrix's largest
    log-ratio). ``statistics`` names data statistics the matrix was built from (the OPT matrices use the
    group/label distribution): then the *public-statistics caveat* says which."""
    if statistics:
        return Guarantee(epsilon, 0.0, Label.PUBLIC_STATISTICS, Neighbouring.LOCAL, protects="each user's report",
                         accountant="exact (largest log-ratio of the matrix)",
                         caveat=f"the matrix is built from {statistics} (treated as public)")
    return Guarantee(epsilon, 0.0, Label.ACCOUNTED, Neighbouring.LOCAL, protects="each user's report",
                     accountant="exact (largest log-ratio of the matrix)")


def _check_eps(epsilon: float) -> None:
    if not (epsilon > 0):
        raise InvalidParameterError(f"`epsilon` must be > 0; got {epsilon}. Pass a positive privacy budget.")


def grr_matrix(k: int, epsilon: float) -> np.ndarray:
    """Generalized randomized response: keep w.p. e^ε/(e^ε+k−1), else each other value w.p. 1/(e^ε+k−1).

    Spec: seed-003 §5.1 (RR when k = 2).
    """
    _check_eps(epsilon)
    if k < 2:
        raise InvalidParameterError(f"`k` must be >= 2; got {k}")
    e = math.exp(epsilon)
    q = np.full((k, k), 1.0 / (e + k - 1))
    np.fill_diagonal(q, e / (e + k - 1))
    return q


def optimal_binary_matrix(epsilon: float, minority: int) -> np.ndarray:
    """Theorem 14's optimal binary mechanism: minority kept w.p. 1 − e^{−ε}/2, majority uniform.

    Parameters
    ----------
    epsilon
        LDP budget (> 0). The mechanism is exactly ε-LDP (one constraint tight).
    minority
        The group (0 or 1) with the smaller proportion in the data the mechanism is applied to
        (on ties both choices are optimal).

    Spec: seed-003 §5.4, Theorem 14: (p*, q*) = (1 − e^{−ε}/2, 1/2) when group 0 is the minority.
    """
    _check_eps(epsilon)
    if minority not in (0, 1):
        raise InvalidParameterError(f"`minority` must be 0 or 1; got {minority}")
    keep = 1.0 - math.exp(-epsilon) / 2.0
    q = np.full((2, 2), 0.5)
    q[minority] = [1.0 - keep, keep] if minority == 1 else [keep, 1.0 - keep]
    return q


def ldp_epsilon(matrix: np.ndarray) -> float:
    """The smallest ε for which ``matrix`` is ε-LDP: max over outputs of log(max_a / min_a)."""
    m = np.asarray(matrix, dtype=float)
    hi, lo = m.max(axis=0), m.min(axis=0)
    with np.errstate(divide="ignore"):
        ratios = np.where(hi > 0, np.log(hi) - np.log(lo), 0.0)
    return float(ratios.max())


def perturb(values: np.ndarray, matrix: np.ndarray, *, rng: np.random.Generator) -> np.ndarray:
    """Draw Z_i ~ matrix[values_i, :] independently for every i (vectorized inverse-CDF sampling)."""
    values = np.asarray(values)
    m = np.asarray(matrix, dtype=float)
    if values.size and (values.min() < 0 or values.max() >= m.shape[0]):
        raise InvalidParameterError(f"values must lie in 0..{m.shape[0] - 1}")
    cdf = np.cumsum(m, axis=1)
    cdf[:, -1] = 1.0
    u = rng.random(values.shape)
    return (u[..., None] > cdf[values]).sum(axis=-1).astype(values.dtype if values.dtype.kind in "iu" else np.int64)


# --------------------------------------------------------------------------------------------
# Subset Selection (Wang et al. 2016)


def _check_k(k: int) -> None:
    if int(k) != k or k < 2:
        raise InvalidParameterError(f"`k` (number of attribute values) must be an integer >= 2; got {k}")


def ss_subset_size(k: int, epsilon: float) -> int:
    """ω = max(1, rint(k / (e^ε + 1))): the size of the reported subset.

    Spec: seed-003 §5.2 (``sub_k`` of multi-freq-ldpy's ``SS_Client``; numpy's rint rounds half to even).
    """
    _check_eps(epsilon)
    _check_k(k)
    return int(max(1, np.rint(k / (math.exp(epsilon) + 1.0))))


def ss_keep_probability(k: int, epsilon: float) -> float:
    """Probability that the true value is in the reported subset: ω e^ε / (ω e^ε + k − ω).

    Spec: seed-003 §5.2, step 2.
    """
    w = ss_subset_size(k, epsilon)
    e = math.exp(epsilon)
    return w * e / (w * e + k - w)


def ss_inclusion_matrix(k: int, epsilon: float) -> np.ndarray:
    """``M[a, j] = Pr(j ∈ Ω | A = a)`` for Subset Selection (rows sum to ω).

    The true value is included w.p. p = ss_keep_probability; any other value w.p.
    p(ω−1)/(k−1) + (1−p)ω/(k−1). Spec: seed-003 §9.1 item 8.
    """
    w = ss_subset_size(k, epsilon)
    p = ss_keep_probability(k, epsilon)
    other = (p * (w - 1) + (1.0 - p) * w) / (k - 1)
    m = np.full((k, k), other)
    np.fill_diagonal(m, p)
    return m


def subset_selection_matrix(k: int, epsilon: float) -> tuple[np.ndarray, list[tuple[int, ...]]]:
    """Exact law of Subset Selection over all subsets of size ω: ``(Q, subsets)``.

    ``Q[a, s] = Pr(Ω = subsets[s] | A = a)`` equals p / C(k−1, ω−1) if a ∈ subsets[s] and
    (1 − p) / C(k−1, ω) otherwise (both steps of §5.2 draw uniformly without replacement).
    When ω = 1 the subsets are the singletons in order and Q equals :func:`grr_matrix`.

    Spec: seed-003 §5.2.
    """
    w = ss_subset_size(k, epsilon)
    p = ss_keep_probability(k, epsilon)
    subsets = list(itertools.combinations(range(k), w))
    inside = p / math.comb(k - 1, w - 1)
    outside = (1.0 - p) / math.comb(k - 1, w) if w <= k - 1 else 0.0
    q = np.empty((k, len(subsets)))
    for s, sub in enumerate(subsets):
        member = np.zeros(k, dtype=bool)
        member[list(sub)] = True
        q[:, s] = np.where(member, inside, outside)
    return q, subsets


def subset_selection(values: np.ndarray, k: int, epsilon: float, *, rng: np.random.Generator) -> np.ndarray:
    """Perturb each value with Subset Selection; return the multi-hot indicator (n × k, uint8) of Ω.

    Vectorized: the true value is kept w.p. p; the remaining ω−1 (kept) or ω (not kept) members
    are the values with the smallest i.i.d. uniform keys among the k−1 others, which is a uniform
    draw without replacement. Spec: seed-003 §5.2 and L6 (multi-hot encoding of Ω).
    """
    _check_k(k)
    values = np.asarray(values, dtype=np.int64)
    if values.size and (values.min() < 0 or values.max() >= k):
        raise InvalidParameterError(f"values must lie in 0..{k - 1}; got range {values.min()}..{values.max()}")
    w = ss_subset_size(k, epsilon)
    p = ss_keep_probability(k, epsilon)
    n = values.shape[0]
    rows = np.arange(n)
    keep = rng.random(n) < p
    keys = rng.random((n, k))
    keys[rows, values] = np.inf  # the true value never competes for the "other" slots
    ranks = np.argsort(np.argsort(keys, axis=1), axis=1)
    n_others = np.where(keep, w - 1, w)
    out = (ranks < n_others[:, None]).astype(np.uint8)
    out[rows, values] = keep.astype(np.uint8)
    return out


# --------------------------------------------------------------------------------------------
# Optimal non-binary mechanism: problem (5.5.9)


@dataclass(frozen=True)
class OptimalMechanism:
    """Solution of the non-binary problem (5.5.9).

    Attributes
    ----------
    matrix
        Row-stochastic k × k ``Q[a, z] = Pr(Z = z | A = a)``.
    delta
        Optimal data unfairness Δ(D_M) (Definition 10) reached, up to the bisection tolerance.
    utility
        Pr(A = Z) = Σ_i p_i Q[i, i] of the returned matrix (the tie-break maximizes it).
    zeta
        The error-probability bound used (Σ p_i q_ii ≥ 1 − ζ); 1 means no utility constraint.
    lp_solves
        Number of LPs solved (bisection + tie-break).
    """

    matrix: np.ndarray
    delta: float
    utility: float
    zeta: float
    epsilon: float
    lp_solves: int


# HiGHS' default feasibility tolerance (1e-7) lets LDP ratios exceed e^ε by ~1e-8; tighten it.
_HIGHS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


def _check_distribution(p: np.ndarray, p1: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    p = np.asarray(p, dtype=float)
    p1 = np.asarray(p1, dtype=float)
    if p.ndim != 1 or p.shape != p1.shape or p.size < 2:
        raise InvalidParameterError(f"p and p1 must be 1-D arrays of the same length >= 2; got {p.shape}, {p1.shape}")
    if np.any(p <= 0) or abs(p.sum() - 1.0) > 1e-9:
        raise InvalidParameterError("p (group proportions Pr(A=i)) must be positive and sum to 1; "
                                    f"got {p.tolist()}. Drop empty groups first.")
    if np.any(p1 < 0) or np.any(p1 > 1):
        raise InvalidParameterError(f"p1 (Pr(Y=1|A=i)) must lie in [0, 1]; got {p1.tolist()}")
    py = float(p @ p1)
    if not 0 < py:
        raise InvalidParameterError("Pr(Y=1) must be > 0 for the data-unfairness Δ of Definition 10")
    return p, p1, py


def _polytope(k: int, epsilon: float, p: np.ndarray, zeta: float | None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Constraints 1–4 of §5.5 on the k² entries of Q (row-major): A_ub x ≤ b_ub, A_eq x = b_eq."""
    e = math.exp(epsilon)
    idx = np.arange(k * k).reshape(k, k)
    a_ub, b_ub = [], []
    for i in range(k):
        for j in range(k):
            if i == j:
                continue
            r = np.zeros(k * k)
            r[idx[j, j]] = 1.0
            r[idx[i, j]] = -e          # LDP (5.5.7): q_jj ≤ e^ε q_ij
            a_ub.append(r)
            r = np.zeros(k * k)
            r[idx[i, j]] = 1.0
            r[idx[i, i]] = -1.0        # truthfulness: q_ij ≤ q_ii
            a_ub.append(r)
            r = np.zeros(k * k)
            r[idx[i, j]] = 1.0
            r[idx[j, j]] = -1.0        # truthfulness: q_ij ≤ q_jj
            a_ub.append(r)
            b_ub += [0.0, 0.0, 0.0]
    if zeta is not None and zeta < 1.0:
        r = np.zeros(k * k)
        r[np.diag(idx)] = -p           # utility (5.5.6): Σ p_i q_ii ≥ 1 − ζ
        a_ub.append(r)
        b_ub.append(-(1.0 - zeta))
    a_eq = np.zeros((k, k * k))
    for i in range(k):
        a_eq[i, idx[i]] = 1.0          # row-stochastic
    return np.array(a_ub), np.array(b_ub), a_eq, np.ones(k)


def _fractions(k: int, p: np.ndarray, p1: np.ndarray, py: float) -> tuple[np.ndarray, np.ndarray]:
    """Rows N_a, D_a (linear in Q) with Pr(Y=1|Z=a)/Pr(Y=1) − 1 = N_a·q / D_a·q."""
    num = np.zeros((k, k * k))
    den = np.zeros((k, k * k))
    for a in range(k):
        for j in range(k):
            num[a, j * k + a] = (p1[j] - py) * p[j]
            den[a, j * k + a] = py * p[j]
    return num, den


def zeta_min(p: np.ndarray, epsilon: float) -> float:
    """Smallest ζ for which (5.5.9) is feasible: 1 − max_Q Σ p_i q_ii over constraints 1–3 (an LP).

    Spec: seed-003 §5.5 ("we use the smallest value for which the problem remains feasible").
    """
    from scipy.optimize import linprog

    _check_eps(epsilon)
    p = np.asarray(p, dtype=float)
    k = p.size
    a_ub, b_ub, a_eq, b_eq = _polytope(k, epsilon, p, None)
    c = np.zeros(k * k)
    c[np.arange(k) * (k + 1)] = -p
    res = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq, bounds=[(0, 1)] * (k * k), method="highs", options=_HIGHS)
    if res.status != 0:  # pragma: no cover - the polytope always contains the uniform matrix
        raise RuntimeError(f"zeta_min LP failed: {res.message}")
    return float(1.0 + res.fun)


def optimal_nonbinary_matrix(p: np.ndarray, p1: np.ndarray, epsilon: float, *, zeta: float = 1.0,
                             tol: float = 1e-7, slack: float = 1e-6) -> OptimalMechanism:
    """Globally optimal ε-LDP mechanism of problem (5.5.9): min_Q Δ(D_M) under constraints 1–4.

    Δ(D_M) = max_a |N_a(Q)/D_a(Q)| with D_a > 0 on the feasible set, so {Q : |N_a| ≤ t D_a ∀a} is a
    polytope for fixed t and the problem is quasi-convex: bisection on t with a HiGHS LP
    feasibility check finds the optimum t* to ``tol``. Among the Q with Δ ≤ t* + ``slack`` the
    one maximizing Pr(A = Z) = Σ p_i q_ii is returned (tie-break; an arbitrary vertex otherwise).

    Parameters
    ----------
    p, p1
        Pr(A = i) and Pr(Y = 1 | A = i), i = 0..k−1 (full-data statistics by default, spec L2).
    epsilon
        LDP budget (> 0).
    zeta
        Error-probability bound of constraint (5.5.6); 1 (default, the authors' code) makes it
        inactive; use :func:`zeta_min` (plus a small margin) for the thesis text's choice.

    Spec: seed-003 §5.5 (5.5.8)–(5.5.9), "Recommended exact solver", Appendix A; decision L1.
    """
    from scipy.optimize import linprog

    _check_eps(epsilon)
    p, p1, py = _check_distribution(p, p1)
    if not 0 < zeta <= 1:
        raise InvalidParameterError(f"`zeta` must lie in (0, 1]; got {zeta}. Use zeta_min(p, epsilon) as the "
                                    "smallest feasible value.")
    k = p.size
    a_ub, b_ub, a_eq, b_eq = _polytope(k, epsilon, p, zeta)
    num, den = _fractions(k, p, p1, py)
    bounds = [(0.0, 1.0)] * (k * k)
    zeros = np.zeros(k * k)
    b_frac = np.concatenate([b_ub, np.zeros(2 * k)])

    def feasible(t: float) -> bool:
        res = linprog(zeros, A_ub=np.vstack([a_ub, num - t * den, -num - t * den]), b_ub=b_frac,
                      A_eq=a_eq, b_eq=b_eq, bounds=bounds, method="highs", options=_HIGHS)
        return res.status == 0

    solves = 0
    lo, hi = 0.0, float(np.max(np.abs(p1 / py - 1.0))) + 1.0
    if not feasible(hi):
        raise InvalidParameterError(f"problem (5.5.9) is infeasible at epsilon={epsilon}, zeta={zeta}; "
                                    f"zeta must be >= zeta_min = {zeta_min(p, epsilon):.6g}")
    solves += 1
    if feasible(0.0):
        hi = 0.0
    solves += 1
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        solves += 1
        if feasible(mid):
            hi = mid
        else:
            lo = mid
    t = hi + slack
    c = np.zeros(k * k)
    c[np.arange(k) * (k + 1)] = -p
    res = linprog(c, A_ub=np.vstack([a_ub, num - t * den, -num - t * den]), b_ub=b_frac, A_eq=a_eq, b_eq=b_eq,
                  bounds=bounds, method="highs", options=_HIGHS)
    solves += 1
    if res.status != 0:  # pragma: no cover - t ≥ a feasible bisection point
        raise RuntimeError(f"tie-break LP failed: {res.message}")
    q = np.clip(res.x.reshape(k, k), 0.0, None)
    q /= q.sum(axis=1, keepdims=True)
    col = (p[:, None] * q).sum(axis=0)
    ratio = (p * p1) @ q / (py * col) - 1.0
    return OptimalMechanism(matrix=q, delta=float(np.max(np.abs(ratio))), utility=float(p @ np.diag(q)),
                            zeta=float(zeta), epsilon=float(epsilon), lp_solves=solves)


def nonbinary_constraint_violation(q: np.ndarray, epsilon: float, p: np.ndarray | None = None,
                                   zeta: float = 1.0) -> float:
    """Largest violation (≥ 0; 0 if feasible) of constraints 1–4 of §5.5 by the matrix ``q``.

    LDP is checked as a ratio, max_z (max_a q_az − e^ε min_a q_az); truthfulness as
    q_ij ≤ min(q_ii, q_jj); rows must sum to 1 and entries be ≥ 0; utility Σ p_i q_ii ≥ 1 − ζ.
    Spec: seed-003 §5.5, §9.1 item 7(a).
    """
    q = np.asarray(q, dtype=float)
    k = q.shape[0]
    e = math.exp(epsilon)
    diag = np.diag(q)
    viol = [
        float(np.max(q.max(axis=0) - e * q.min(axis=0))),
        float(np.max(np.abs(q.sum(axis=1) - 1.0))),
        float(np.max(-q)),
        float(np.max(q - diag[:, None])),
        float(np.max(q - diag[None, :])),
    ]
    if p is not None:
        viol.append(float((1.0 - zeta) - np.asarray(p) @ diag))
    return max(0.0, *viol) if k else 0.0
