"""Data unfairness Δ, Δ′ of a (perturbed) dataset (the classifier gaps are in :mod:`repro.fairness.metrics`).

Data level (Part II of the thesis): p_i = Pr(A=i), p_{1|i} = Pr(Y=1|A=i), Pr(Y=1) = Σ p_i p_{1|i};
Δ (Definition 10, Calmon et al. 2017) = max_a |p_{1|a}/Pr(Y=1) − 1|; Δ′ (Definition 11, Kamiran &
Calders 2012) = max_a p_{1|a} − min_a p_{1|a}. A mechanism Q acting on A only (Z ⟂ Y | A) gives
Pr(Y=1|Z=z) = Σ_j p_{1|j} p_j Q[j,z] / Σ_j p_j Q[j,z], and the same formulas apply with Z for A.

Spec: seed-003-thesis.md §1.2, §1.3, §5.3 (Lemma 13), §5.4 (B.0.2), Lemma 16.
"""

from __future__ import annotations

import numpy as np

from repro.errors import InvalidParameterError

__all__ = [
    "binary_ratio",
    "delta",
    "delta_prime",
    "group_stats",
    "perturbed_stats",
]


def group_stats(a: np.ndarray, y: np.ndarray, k: int | None = None) -> tuple[np.ndarray, np.ndarray, float]:
    """Empirical (p, p1, Pr(Y=1)) of attribute ``a`` ∈ {0..k−1} and binary label ``y``.

    Groups with no rows get p_i = 0 and p1_i = nan. Spec: seed-003 §1.3.
    """
    a = np.asarray(a, dtype=np.int64)
    y = np.asarray(y, dtype=float)
    if a.shape != y.shape or a.ndim != 1 or a.size == 0:
        raise InvalidParameterError(f"a and y must be non-empty 1-D arrays of equal length; got {a.shape}, {y.shape}")
    k = int(a.max()) + 1 if k is None else int(k)
    counts = np.bincount(a, minlength=k).astype(float)
    pos = np.bincount(a, weights=y, minlength=k)
    with np.errstate(invalid="ignore", divide="ignore"):
        p1 = pos / counts
    return counts / counts.sum(), p1, float(y.mean())


def delta(p: np.ndarray, p1: np.ndarray) -> float:
    """Δ (Definition 10): max over groups with p_a > 0 of |p_{1|a} / Pr(Y=1) − 1|.

    Spec: seed-003 §1.3, Definition 10.
    """
    p = np.asarray(p, dtype=float)
    p1 = np.asarray(p1, dtype=float)
    mask = p > 0
    py = float(p[mask] @ p1[mask])
    if py <= 0:
        raise InvalidParameterError("Δ (Definition 10) needs Pr(Y=1) > 0")
    return float(np.max(np.abs(p1[mask] / py - 1.0)))


def delta_prime(p: np.ndarray, p1: np.ndarray) -> float:
    """Δ′ (Definition 11): max_a p_{1|a} − min_a p_{1|a} over groups with p_a > 0.

    Spec: seed-003 §1.3, Definition 11.
    """
    p = np.asarray(p, dtype=float)
    v = np.asarray(p1, dtype=float)[p > 0]
    return float(v.max() - v.min())


def perturbed_stats(p: np.ndarray, p1: np.ndarray, matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(Pr(Z=z), Pr(Y=1|Z=z)) after applying ``matrix`` (Q[a, z] = Pr(Z=z|A=a)) to A only.

    Outputs with zero probability get Pr(Y=1|Z=z) = nan. Spec: seed-003 §1.3 (uses Z ⟂ Y | A).
    """
    p = np.asarray(p, dtype=float)
    p1 = np.asarray(p1, dtype=float)
    q = np.asarray(matrix, dtype=float)
    if q.shape[0] != p.size:
        raise InvalidParameterError(f"matrix must have one row per group ({p.size}); got shape {q.shape}")
    pz = p @ q
    with np.errstate(invalid="ignore", divide="ignore"):
        p1z = (p * p1) @ q / pz
    return pz, p1z


def binary_ratio(p0: float, p: float, q: float) -> float:
    """Δ′(D_M)/Δ′(D) for the binary mechanism (p, q) of (5.4.1), formula (B.0.2).

    Pr(Z=0|A=0) = p, Pr(Z=1|A=1) = q, p₀ = Pr(A=0). Independent of p_{1|0}, p_{1|1}.
    Spec: seed-003 §5.4, (B.0.2).
    """
    p1_ = 1.0 - p0
    return p0 * p1_ * (p * q - (1 - p) * (1 - q)) / ((p0 * (1 - p) + p1_ * q) * (p0 * p + p1_ * (1 - q)))
