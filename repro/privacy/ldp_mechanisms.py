"""Local differential privacy mechanisms on a categorical attribute, as exact transition matrices.

A mechanism on k values is a row-stochastic matrix ``Q`` with ``Q[a, z] = Pr(Z = z | A = a)``;
it is ε-LDP iff for every output z, max_a Q[a, z] ≤ e^ε min_a Q[a, z].

Spec: ../shared/specs/seed-003-thesis.md §5.1 (GRR), §5.4 (Theorem 14).
"""

from __future__ import annotations

import math

import numpy as np

from repro.errors import InvalidParameterError

__all__ = ["grr_matrix", "ldp_epsilon", "optimal_binary_matrix", "perturb"]


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
