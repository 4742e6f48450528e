"""FairProjection (Alghamdi et al. 2022): information projection of a classifier onto group-fairness constraints.

Given base-model probabilities ``P[i, c] = P_base(Y = c | x_i)`` on n points and per-point constraint
matrices ``G[i] ∈ R^{c×k}``, FairProjection solves

    min_h (1/n) Σ_i D(h_i ‖ P_i)   s.t.   (1/n) Σ_i G_iᵀ h_i ≤ 0,   h_i ∈ simplex,

with D = KL(h‖P) ("KL") or KL(P‖h) ("CE", cross-entropy), in the dual over λ ≥ 0 with ADMM
(the authors' ``coreMP.admm_tf``; NumPy here, no TensorFlow, no cvxpy). The projected classifier is

* KL: h(·|x) = softmax(log P(·|x) − G(x) λ);
* CE: h_c(·|x) = P_c / (w_c + ν) with w = G(x) λ and ν the per-point normaliser (a 1-D Newton solve,
  equivalent to the authors' per-sample interior-point Newton method ``predict_cross``).

Constraint matrices (``GroupFair.buildG``) for a tolerance α, binary labels and groups s:

* SP: (1−α) P(Ŷ=y) ≤ P(Ŷ=y | S=s) ≤ (1+α) P(Ŷ=y) for every y, s;
* MEO: (1−α) P(Ŷ=y | Y=y) ≤ P(Ŷ=y | Y=y, S=s) ≤ (1+α) P(Ŷ=y | Y=y) for every y, s, where the
  unknown Y of a point is replaced by the base model's P(Y=y|x).

Group membership enters through ``group_probs``: the one-hot of the true s (what the reference code
does, as s is a model input) or an auxiliary model's P(S|X) (SP) / P(S|X, Y=y) (MEO).

Spec: ../shared/specs/seed-003-thesis.md §6.4, §10 L8.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import nnls
from scipy.special import log_softmax, softmax
from threadpoolctl import threadpool_limits

from repro.errors import InvalidParameterError

__all__ = [
    "ADMMResult",
    "DIVERGENCES",
    "FUDGE",
    "admm",
    "build_constraints",
    "constraint_violation",
    "group_marginals",
    "one_hot",
    "predict_projected",
    "project_ce",
    "project_kl",
    "smooth",
]

#: Supported projections: "kl" = KL(h‖base), "ce" = KL(base‖h) (cross-entropy).
DIVERGENCES = ("kl", "ce")
#: Smoothing added to base probabilities before the projection (reference code: 1e-4).
FUDGE = 1e-4
_CONSTRAINTS = ("sp", "meo")


def _check(name: str, value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise InvalidParameterError(f"`{name}` must be one of {allowed}; got {value!r}")
    return value


def smooth(probs: np.ndarray, fudge: float = FUDGE) -> np.ndarray:
    """(P + fudge) renormalised per row, as the reference code does before projecting."""
    p = np.asarray(probs, dtype=float) + fudge
    return p / p.sum(axis=1, keepdims=True)


def one_hot(s: np.ndarray, n_groups: int = 2) -> np.ndarray:
    """One-hot matrix (n, n_groups) of integer group labels ``s``."""
    s = np.asarray(s, dtype=np.int64)
    if s.size and (s.min() < 0 or s.max() >= n_groups):
        raise InvalidParameterError(f"group labels must lie in 0..{n_groups - 1}; got range [{s.min()}, {s.max()}]")
    return np.eye(n_groups)[s]


def group_marginals(y: np.ndarray, s: np.ndarray, n_classes: int = 2, n_groups: int = 2) -> np.ndarray:
    """Joint empirical frequencies P(Y=y, S=s) as an (n_classes, n_groups) matrix (``GFair.Pys``)."""
    y = np.asarray(y, dtype=np.int64)
    s = np.asarray(s, dtype=np.int64)
    joint = np.zeros((n_classes, n_groups))
    np.add.at(joint, (y, s), 1.0)
    joint /= max(len(y), 1)
    if np.any(joint == 0):
        raise InvalidParameterError(
            f"every (label, group) cell needs at least one training point; counts {joint * len(y)}")
    return joint


def build_constraints(kind: str, alpha: float, base_probs: np.ndarray, group_probs: np.ndarray,
                      p_ys: np.ndarray, *, rng: np.random.Generator | None = None,
                      jitter: float = 1e-5) -> np.ndarray:
    """Constraint tensor G (n, c, k) of SP or MEO with tolerance α (the reference's ``buildG``).

    Parameters
    ----------
    kind
        "sp" (statistical parity) or "meo" (mean equalized odds).
    alpha
        Tolerance α ≥ 0 (relative, see module docstring).
    base_probs
        (n, c) smoothed base-model probabilities P(Y|x) (MEO weights; the shape for SP).
    group_probs
        SP: (n, g) P(S=s|x) (one-hot of the true s, or an auxiliary model). MEO: (n, g) one-hot of
        the true s, or (n, c, g) with ``group_probs[:, y, :] = P(S|x, Y=y)``.
    p_ys
        (c, g) joint training marginals P(Y=y, S=s) (:func:`group_marginals`).
    rng
        If given, G is jittered with N(0, jitter²) noise as in the reference code (makes GᵀG full rank).

    Returns
    -------
    ndarray (n, c, 2·c·g)
        Columns ordered as the reference: for each label y, the g upper constraints then the g lower
        ones; only row y of each block is non-zero. Constraint j reads (1/n) Σ_i G[i, :, j]·h_i ≤ 0.

    Spec: seed-003 §6.4 (GroupFair.buildG).
    """
    _check("kind", kind, _CONSTRAINTS)
    if not alpha >= 0:
        raise InvalidParameterError(f"tolerance `alpha` must be >= 0; got {alpha}")
    base = np.asarray(base_probs, dtype=float)
    n, c = base.shape
    gp = np.asarray(group_probs, dtype=float)
    p_ys = np.asarray(p_ys, dtype=float)
    g = p_ys.shape[1]
    p_y = p_ys.sum(axis=1)
    p_s = p_ys.sum(axis=0)
    blocks = []
    for yv in range(c):
        up = np.zeros((n, c, g))
        lo = np.zeros((n, c, g))
        if kind == "sp":
            ratio = gp / p_s[None, :]                              # P(S=s|x)/P(S=s)
            up[:, yv, :] = ratio - (1.0 + alpha)
            lo[:, yv, :] = -ratio + (1.0 - alpha)
        else:
            ps = gp[:, yv, :] if gp.ndim == 3 else gp              # P(S=s|x, Y=y)
            ratio = ps / p_ys[yv][None, :]
            w = base[:, yv][:, None]
            up[:, yv, :] = w * (ratio - (1.0 + alpha) / p_y[yv])
            lo[:, yv, :] = w * (-ratio + (1.0 - alpha) / p_y[yv])
        blocks.extend([up, lo])
    G = np.concatenate(blocks, axis=2)
    if rng is not None and jitter > 0:
        G = G + rng.normal(0.0, jitter, size=G.shape)
    return G


@dataclass(frozen=True)
class ADMMResult:
    """Dual solution of the projection: ``lam`` (k,), iterations run, final residuals."""

    lam: np.ndarray
    iterations: int
    primal_residual: float
    dual_change: float


def _gl(G2: np.ndarray, lam: np.ndarray, n: int, c: int) -> np.ndarray:
    return (G2 @ lam).reshape(n, c)


def admm(G: np.ndarray, probs: np.ndarray, *, divergence: str = "kl", rho: float = 2.0,
         max_iter: int = 500, reg: float | None = None, tol: float = 0.0, inner_tol: float = 1e-10,
         inner_max: int = 100) -> ADMMResult:
    """Dual ADMM of the authors' ``coreMP.admm_tf`` (NumPy, vectorized over points).

    Splits v_i = −G_i λ; iterates (1) the per-point v-update (KL: fixed point
    x = −(softmax(x) + a)/(ρ+reg), a = μ + ρGλ − ρ log P; CE: Newton on the normaliser z),
    (2) the λ-update min_{λ≥0} λᵀQλ + dᵀλ with Q = (ρ/2)ΣG_iᵀG_i/n + (reg/2)I and
    d = ΣG_iᵀ(μ_i + ρv_i)/n (solved exactly as a non-negative least-squares problem), (3)
    μ ← μ + (ρ+reg)(v + Gλ). ``reg`` defaults to the reference's 1/√n; ``reg=0`` is plain ADMM.

    Parameters
    ----------
    G
        (n, c, k) constraint tensor (:func:`build_constraints`).
    probs
        (n, c) smoothed base probabilities (strictly positive).
    divergence
        "kl" or "ce".
    max_iter
        ADMM iterations (reference: 500, always run to the end).
    tol
        If > 0, stop early once max|v + Gλ| and max|λ − λ_old| are both below ``tol``.

    Spec: seed-003 §6.4 (coreMP.admm_tf, ρ = 2, max_iter = 500).
    """
    _check("divergence", divergence, DIVERGENCES)
    # Tall-skinny mat-vecs: multi-threaded BLAS only adds contention (20x slower on a busy 2-core box).
    with threadpool_limits(limits=1, user_api="blas"):
        return _admm(np.asarray(G, dtype=float), np.asarray(probs, dtype=float), divergence, rho, max_iter,
                     reg, tol, inner_tol, inner_max)


def _admm(G: np.ndarray, y: np.ndarray, divergence: str, rho: float, max_iter: int, reg: float | None,
          tol: float, inner_tol: float, inner_max: int) -> ADMMResult:
    n, c, k = G.shape
    if y.shape != (n, c) or np.any(y <= 0):
        raise InvalidParameterError(f"`probs` must be strictly positive with shape {(n, c)}; got {y.shape}")
    reg = 1.0 / np.sqrt(n) if reg is None else float(reg)
    rr = rho + reg
    G2 = G.reshape(n * c, k)
    Q = (rho / 2.0) * (G2.T @ G2) / n + (reg / 2.0) * np.eye(k)
    # λᵀQλ + dᵀλ = ‖Aλ − b‖² + const with A = diag(√w) Vᵀ, b = −½ diag(1/√w) Vᵀ d (Q = V diag(w) Vᵀ).
    w, V = np.linalg.eigh(Q)
    keep = w > max(w.max(), 1e-300) * 1e-13
    sq = np.sqrt(w[keep])
    A = sq[:, None] * V[:, keep].T
    logy = np.log(y)
    lam = np.ones(k)
    mu = np.ones((n, c))
    v = np.ones((n, c))
    x = np.zeros((n, c))
    z = np.zeros(n)
    gl = _gl(G2, lam, n, c)
    it = 0
    primal = dual = np.inf
    for it in range(1, max_iter + 1):  # noqa: B007 - iteration count is returned
        cvec = mu + rho * gl
        if divergence == "kl":
            a = cvec - rho * logy
            x = _kl_step(x, a, rr, inner_tol, inner_max)
            v = x - logy
        else:
            x, z = _ce_step(cvec, y, rr, z, inner_tol, inner_max)
            v = -(x + cvec) / rr
        d = G2.T @ (mu + rho * v).reshape(n * c) / n
        b_vec = -0.5 * (V[:, keep].T @ d) / sq
        lam_new, _ = nnls(A, b_vec)
        dual = float(np.abs(lam_new - lam).max())
        lam = lam_new
        gl = _gl(G2, lam, n, c)
        resid = v + gl
        primal = float(np.abs(resid).max())
        mu = mu + rr * resid
        if tol > 0 and primal < tol and dual < tol:
            break
    return ADMMResult(lam=lam, iterations=it, primal_residual=primal, dual_change=dual)


def _kl_step(x: np.ndarray, a: np.ndarray, rr: float, tol: float, max_iter: int) -> np.ndarray:
    """Solve x = −(softmax(x) + a)/rr row-wise (the KL v-update's fixed point).

    Binary case: with δ = x₁ − x₀ the fixed point is the root of
    φ(δ) = δ + (2σ(δ) − 1 + a₁ − a₀)/rr (increasing, φ' ≥ 1), found by Newton's method; then
    x_c = −(softmax_c + a_c)/rr. Otherwise the reference's fixed-point iteration (a contraction
    with factor ≤ 1/(2 rr)), warm-started at the previous x.
    """
    if a.shape[1] == 2:
        da = a[:, 1] - a[:, 0]
        delta = x[:, 1] - x[:, 0]
        for _ in range(max_iter):
            sig = 0.5 * (1.0 + np.tanh(0.5 * delta))
            phi = delta + (2.0 * sig - 1.0 + da) / rr
            step = phi / (1.0 + 2.0 * sig * (1.0 - sig) / rr)
            delta = delta - step
            if np.abs(step).max() < tol:
                break
        sig = 0.5 * (1.0 + np.tanh(0.5 * delta))
        return np.column_stack((-(1.0 - sig + a[:, 0]) / rr, -(sig + a[:, 1]) / rr))
    for _ in range(max_iter):
        x_new = -(softmax(x, axis=1) + a) / rr
        step = np.abs(x_new - x).max()
        x = x_new
        if step < tol:
            break
    return x


def _ce_step(cvec: np.ndarray, y: np.ndarray, rr: float, z: np.ndarray, tol: float,
             max_iter: int) -> tuple[np.ndarray, np.ndarray]:
    """The CE v-update (reference ``admm_tf``, div='cross-entropy'): Newton on the normaliser z.

    x_c = ½(−(c_c + z) + √(4 rr P_c + (c_c + z)²)) with z such that Σ_c x_c = 1 (a root of a
    decreasing convex function of z); warm-started at the previous z. Returns (x, z).
    """
    a = 4.0 * rr * y
    cols = [cvec[:, j] for j in range(cvec.shape[1])]
    acols = [a[:, j] for j in range(a.shape[1])]
    for _ in range(max_iter):
        gz = -1.0
        gprime = 0.0
        for cj, aj in zip(cols, acols, strict=True):
            t = cj + z
            b = np.sqrt(aj + t * t)
            num = b - t
            gz = gz + 0.5 * num
            gprime = gprime - 0.5 * num / b
        inc = gz / gprime
        z = z - inc
        if np.abs(inc).max() < tol:
            break
    cpz = cvec + z[:, None]
    return 0.5 * (np.sqrt(a + cpz * cpz) - cpz), z


def project_kl(probs: np.ndarray, G: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """KL projection: h = softmax(log P − Gλ), row-wise (the reference's ``predict``, div='kl')."""
    y = np.asarray(probs, dtype=float)
    n, c = y.shape
    wl = (np.asarray(G, dtype=float).reshape(n * c, -1) @ np.asarray(lam, dtype=float)).reshape(n, c)
    return np.exp(log_softmax(np.log(y) - wl, axis=1))


def project_ce(probs: np.ndarray, G: np.ndarray, lam: np.ndarray, *, tol: float = 1e-13,
               max_iter: int = 200) -> np.ndarray:
    """Cross-entropy projection: argmin_h Σ_c P_c log(P_c/h_c) + (Gλ)ᵀh over the simplex, per row.

    KKT: h_c = P_c / (w_c + ν) with ν > −min_c w_c solving Σ_c P_c/(w_c + ν) = 1; the left side is
    convex and decreasing in ν, so Newton's method started left of the root converges monotonically.
    Same optimum as the reference's interior-point ``predict_cross``.
    """
    y = np.asarray(probs, dtype=float)
    n, c = y.shape
    w = (np.asarray(G, dtype=float).reshape(n * c, -1) @ np.asarray(lam, dtype=float)).reshape(n, c)
    jmin = np.argmin(w, axis=1)
    rows = np.arange(n)
    nu = -w[rows, jmin] + 0.5 * y[rows, jmin]          # f(ν) ≥ P_j/(P_j/2) − 1 = 1 > 0: left of root
    for _ in range(max_iter):
        den = w + nu[:, None]
        f = (y / den).sum(axis=1) - 1.0
        fp = -(y / den**2).sum(axis=1)
        step = f / fp
        nu = nu - step
        if np.abs(step).max() < tol * (1.0 + np.abs(nu).max()):
            break
    h = y / (w + nu[:, None])
    return h / h.sum(axis=1, keepdims=True)


def predict_projected(probs: np.ndarray, G: np.ndarray, lam: np.ndarray, divergence: str) -> np.ndarray:
    """The projected classifier's probabilities h (n, c) for ``divergence`` "kl" or "ce"."""
    _check("divergence", divergence, DIVERGENCES)
    return project_kl(probs, G, lam) if divergence == "kl" else project_ce(probs, G, lam)


def constraint_violation(G: np.ndarray, h: np.ndarray) -> float:
    """max_j (1/n) Σ_i G[i, :, j]·h_i: ≤ 0 iff h satisfies every constraint (on these points)."""
    G = np.asarray(G, dtype=float)
    n, c, k = G.shape
    return float((G.reshape(n * c, k).T @ np.asarray(h, dtype=float).reshape(n * c)).max() / n)
