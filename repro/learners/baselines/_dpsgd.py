"""Batched DP-SGD for logistic regression with a group-gap penalty (the core of every baseline).

Spec: seed-004-dpfermi.md §8 (the baselines train logistic regression with DP-SGD: per-sample
clipping + Gaussian noise, Abadi et al. 2016). ``G`` models are trained together on the same
Poisson batches, so one step is one (m × d)·(d × G) product; each model has its own penalty
weights, labels and sample weights. Same-batch training changes nothing about each model's own
privacy (each model is one DP-SGD run; the shared batch is only common random numbers).

Penalty. Samples fall into *cells* c (DP: the group a; EO: the pair (a, y)) and each cell has a
*reference* r(c) (DP: the whole batch; EO: the samples with the same label y). With batch means
F̄_c and F̄_{r(c)} of the soft predictions F_i = σ(θᵀx̃_i),

    P(θ) = Σ_c w_c · |F̄_c − F̄_{r(c)}|,

and the per-sample coefficient of x̃_i in the gradient of (1/m̄)Σ_i ℓ_i + P is

    coef_i = sw_i (F_i − y_i) + m̄ · F_i(1 − F_i) · [a_{c_i}/m_{c_i} − (Σ_{c: r(c)=r_i} a_c)/m_{r_i}],
    a_c = w_c · sign(F̄_c − F̄_{r(c)}),

with m̄ the expected batch size. Each g_i = coef_i·x̃_i is clipped to ``clip_norm`` (its norm is
|coef_i|·‖x̃_i‖, no per-sample matrix is formed), the clipped sum gets N(0, (z·C)²) noise and is
divided by m̄ (Opacus semantics, as :mod:`repro.learners.dp_sgd`).

Privacy caveat (ours, stated in every baseline): g_i also depends on the other batch members
through the cell means and signs, so per-sample clipping bounds the change of the *summed* gradient
only approximately; the accounted event is the standard DP-SGD event (Poisson-subsampled Gaussian,
add/remove adjacency), as the baselines' own implementations do.

Engines: the loop below is the numpy reference; by default the steps run compiled
(:mod:`repro.learners.baselines._dpsgd_compiled`, the same draws in the same order, tested to 1e-9).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from repro.errors import InvalidParameterError
from repro.learners.baselines._dpsgd_compiled import (
    Features,
    draw_step,
    prepare_features,
    train_batched_compiled,
)
from repro.learners.dp_sgd import noise_std, schedule
from repro.learners.logistic import sigmoid, torch_linear_init
from repro.privacy.dp_sgd import clip_factors

__all__ = ["CellLayout", "cell_layout", "gap_coefficients", "prepare_features", "train_batched_dp_sgd",
           "BatchedModels", "draw_step"]


@dataclass(frozen=True)
class CellLayout:
    """Cell and reference index of every sample, and the reference of every cell."""

    cell: np.ndarray
    ref: np.ndarray
    cell_ref: np.ndarray
    n_cells: int
    n_refs: int


def cell_layout(s: np.ndarray, y: np.ndarray, fairness: str, k: int | None = None) -> CellLayout:
    """DP: cells = groups a, one reference (all); EO: cells = (y, a) pairs (index y·k + a), refs = y.

    Spec: seed-004 §7.3 (metrics (10) and (11) compare groups within the whole set or within Y = y).
    """
    s = np.asarray(s, dtype=np.int64)
    y = np.asarray(y, dtype=np.int64)
    k = int(s.max()) + 1 if k is None else int(k)
    if fairness == "dp":
        return CellLayout(s, np.zeros_like(s), np.zeros(k, dtype=np.int64), k, 1)
    if fairness == "eo":
        return CellLayout(y * k + s, y, np.repeat(np.arange(2), k), 2 * k, 2)
    raise InvalidParameterError(f"fairness must be 'dp' or 'eo'; got {fairness!r}.")


def gap_coefficients(F: np.ndarray, cell: np.ndarray, ref: np.ndarray, cell_ref: np.ndarray,
                     weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(dP/dF_i of every sample and model, the gaps F̄_c − F̄_{r(c)}) for P = Σ_c w_c|gap_c|.

    ``F`` is (m, G); ``weights`` is (G, K). Empty cells have gap 0. Returns arrays of shape
    (m, G) and (K, G).
    """
    K = cell_ref.size
    R = int(cell_ref.max()) + 1
    Oc = (cell[:, None] == np.arange(K)[None, :]).astype(float)    # (m, K) one-hot cells
    Or = (ref[:, None] == np.arange(R)[None, :]).astype(float)     # (m, R) one-hot references
    mc = Oc.sum(axis=0)
    mr = Or.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_c = (Oc.T @ F) / mc[:, None]
        mean_r = (Or.T @ F) / mr[:, None]
    gap = mean_c - mean_r[cell_ref]
    gap[mc == 0] = 0.0
    a = np.sign(gap) * weights.T                    # (K, G)
    Ocr = (cell_ref[:, None] == np.arange(R)[None, :]).astype(float)  # (K, R)
    a_ref = Ocr.T @ a                               # (R, G)
    dP = Oc @ (a / np.maximum(mc, 1)[:, None]) - Or @ (a_ref / np.maximum(mr, 1)[:, None])
    return dP, gap


@dataclass
class BatchedModels:
    """G logistic models: weights ``w`` (d, G), biases ``b`` (G,)."""

    w: np.ndarray
    b: np.ndarray

    def decision(self, X: np.ndarray) -> np.ndarray:
        return X @ self.w + self.b[None, :]


def train_batched_dp_sgd(X: np.ndarray | Features, y: np.ndarray, layout: CellLayout, *, weights: np.ndarray,
                         noise_multiplier: float, clip_norm: float, lr: float, batch_size: int,
                         steps: int, rng: np.random.Generator, models: BatchedModels | None = None,
                         labels: np.ndarray | None = None, sample_weight: np.ndarray | None = None,
                         on_epoch: Callable[[int, BatchedModels], np.ndarray | None] | None = None,
                         steps_per_epoch: int | None = None, engine: str = "compiled") -> BatchedModels:
    """Run ``steps`` DP-SGD steps (Poisson sampling with q = B/n) on G models at once.

    Parameters
    ----------
    X, y
        Standardized features (n, d) and 0/1 labels (n,) (``y`` defines the EO cells). X may be given as
        :func:`prepare_features` of it, for many calls on the same rows (the compiled engine then stores
        them once).
    layout
        :func:`cell_layout` of the training set.
    weights
        Penalty weights (G, K); zeros give plain DP-SGD.
    noise_multiplier, clip_norm
        z and C; the noise std on the clipped sum is z·C.
    labels, sample_weight
        Optional per-model training labels and sample weights (n, G) (cost-sensitive learners);
        default ``y`` and 1.
    on_epoch
        Called after every ``steps_per_epoch`` steps with (epoch index, models); may return new
        penalty weights (G, K) (dual updates).
    models
        Warm start; else every model starts from PyTorch's ``nn.Linear`` initialization.
    engine
        ``"compiled"``: the steps of an epoch in one JAX program (:mod:`repro.learners.baselines._dpsgd_compiled`,
        the same draws); ``"numpy"``: the loop below, the reference the tests compare it with (to 1e-9).

    Spec: seed-004 §8 (DP-SGD baselines); Abadi et al. 2016.
    """
    features = X if isinstance(X, Features) else None
    X = features.X if features is not None else np.ascontiguousarray(X, dtype=np.float64)
    n, d = X.shape
    weights = np.array(weights, dtype=np.float64, ndmin=2)
    G = weights.shape[0]
    if noise_multiplier < 0 or not clip_norm > 0 or not lr > 0:
        raise InvalidParameterError(
            f"need noise_multiplier >= 0, clip_norm > 0, lr > 0; got {noise_multiplier}, {clip_norm}, {lr}.")
    if models is None:
        inits = [torch_linear_init(d, rng=rng) for _ in range(G)]
        models = BatchedModels(np.stack([w for w, _ in inits], axis=1), np.array([b for _, b in inits]))
    else:
        models = BatchedModels(models.w.copy(), models.b.copy())
    # default labels y and weights 1 stay (n,) / absent: the same coefficients as the (n, G) arrays
    # (F − y broadcast; ×1 is exact) without gathering G columns per step
    lab = np.asarray(y, dtype=float)[:, None] if labels is None else labels
    sw = sample_weight
    q, one_epoch = schedule(n, batch_size, 1, rule="B/n")
    expected = max(int(n * q), 1)
    sigma = noise_std(noise_multiplier, clip_norm)
    per_epoch = steps_per_epoch or one_epoch
    if engine not in ("compiled", "numpy"):
        raise InvalidParameterError(f"engine must be 'compiled' or 'numpy'; got {engine!r}.")
    if engine == "compiled":
        hook = None if on_epoch is None else (lambda e, w, b: on_epoch(e, BatchedModels(w, b)))
        w, b = train_batched_compiled(features or prepare_features(X), lab, sw, layout, weights=weights,
                                      w=models.w, b=models.b, sigma=sigma, clip_norm=clip_norm, lr=lr, q=q,
                                      expected=expected, steps=steps, per_epoch=per_epoch, rng=rng, on_epoch=hook)
        return BatchedModels(w, b)
    row_norm = features.row_norm if features is not None else np.sqrt(np.einsum("ij,ij->i", X, X) + 1.0)
    for t in range(steps):
        idx, noise_w, noise_b = draw_step(n, q, sigma, (d, G), rng)   # no other draw before the step's noise
        XB = np.take(X, idx, axis=0)   # the same rows as X[idx], ≈ 25 % faster
        F = sigmoid(XB @ models.w + models.b[None, :])
        coef = F - lab[idx] if sw is None else (F - lab[idx]) * sw[idx]
        if np.any(weights):
            dP, _ = gap_coefficients(F, layout.cell[idx], layout.ref[idx], layout.cell_ref, weights)
            coef = coef + expected * dP * F * (1 - F)
        clip = clip_factors(np.abs(coef) * row_norm[idx][:, None], clip_norm)
        cc = coef * clip
        gw = XB.T @ cc
        gb = cc.sum(axis=0)
        if noise_w is not None:
            gw = gw + noise_w
            gb = gb + noise_b
        models.w -= lr * gw / expected
        models.b -= lr * gb / expected
        if on_epoch is not None and (t + 1) % per_epoch == 0:
            new = on_epoch((t + 1) // per_epoch - 1, models)
            if new is not None:
                weights = np.array(new, dtype=np.float64, ndmin=2)
    return models
