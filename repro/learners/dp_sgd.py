"""DP-SGD trainer for logistic regression in numpy, with closed-form per-sample gradients (Opacus semantics).

Spec: seed-003-thesis.md §2.7 steps 3–4 and §3.2: per-sample clipping to C, Gaussian noise of std
σ = noise_multiplier × C added to the sum of clipped gradients, Poisson sampling, the sum divided by
the *expected* batch size (Opacus with ``loss_reduction="mean"``), plain SGD (no momentum).

Per-sample gradient of the BCE loss of σ(w·x + b): g_i = (σ(w·x_i + b) − y_i)·[x_i, 1], so its
norm is |σ_i − y_i|·√(‖x_i‖² + 1) and the clipped sum is X_Bᵀ(r ⊙ c) with
c_i = min(1, C/‖g_i‖); nothing of size (batch × d) is ever materialized beyond X_B itself.
The mechanism's primitives (clipping factors, Poisson sampling) live in :mod:`repro.privacy.dp_sgd`.

This module is also the one place that calibrates the Poisson-subsampled Gaussian for a learner: its
schedule (q, T) (:func:`schedule`), the noise multiplier for a budget (:func:`calibrate_noise`) and the
noise std σ = z·C (:func:`noise_std`). The compiled unit (:mod:`repro.learners.dp_sgd_unit`), the
baselines (:mod:`repro.learners.baselines`) and DP-FERMI's per-sample mode call them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from repro.errors import InvalidParameterError
from repro.learners.logistic import LogisticModel, sigmoid, torch_linear_init
from repro.privacy.accounting import calibrate_noise_multiplier, dp_sgd_event, opacus_sampling
from repro.privacy.dp_sgd import clip_factors
from repro.privacy.guarantee import STANDARDISED_FEATURES, Guarantee, Label, Neighbouring
from repro.privacy.sampling import poisson_batch

__all__ = ["DPSGDResult", "private_gradient", "train_dp_sgd_logistic", "guarantee", "schedule", "calibrate_noise",
           "noise_std"]


#: (q, T) of DP-SGD over ``n`` records: the privacy layer's :func:`repro.privacy.accounting.opacus_sampling` itself
#: (q = 1/⌈n/B⌉ for ``rule="opacus"``, what Opacus does, or min(1, B/n) for ``rule="B/n"``; T = epochs·⌈n/B⌉), under
#: the name every learner reads it by. Spec: seed-003 §2.7 step 4, §3.2, §10 P6.
schedule = opacus_sampling


def calibrate_noise(epsilon: float, delta: float, q: float, steps: int) -> float:
    """Noise multiplier z = σ/C for (ε, δ) after ``steps`` Poisson-subsampled Gaussian steps at rate ``q``
    (PLD accountant; 0 for ε = ∞). Spec: seed-003 §10 P4 (recompute z for the actual (q, T))."""
    if math.isinf(epsilon):
        return 0.0
    return calibrate_noise_multiplier(float(epsilon), float(delta), float(q), int(steps))


def noise_std(noise_multiplier: float, clip_norm: float) -> float:
    """σ = z·C, the std of the Gaussian noise on the sum of clipped gradients. Spec: seed-003 §2.7 step 4."""
    return noise_multiplier * clip_norm


def guarantee(epsilon: float, delta: float) -> Guarantee:
    """What a DP-SGD run calibrated to (ε, δ) promises: add/remove one record, every feature and the label,
    PLD accountant of the Poisson-subsampled Gaussian (spec seed-003 §3.2). Public-statistics caveat: the
    features it sees are standardised with the training rows' statistics (issue 21)."""
    return Guarantee(epsilon, delta, Label.PUBLIC_STATISTICS, Neighbouring.ADD_OR_REMOVE_ONE,
                     caveat=STANDARDISED_FEATURES, accountant="PLD (dp_accounting), Poisson-subsampled Gaussian")


@dataclass(frozen=True)
class DPSGDResult:
    """Trained model and the privacy parameters of the run (its accountant event)."""

    model: LogisticModel
    noise_multiplier: float
    clip_norm: float
    sampling_probability: float
    steps: int
    mean_batch_size: float

    @property
    def event(self):
        """The run's privacy cost as a ``dp_accounting`` event."""
        return dp_sgd_event(self.noise_multiplier, self.sampling_probability, self.steps)


def private_gradient(XB: np.ndarray, yB: np.ndarray, w: np.ndarray, b: float, *, clip_norm: float,
                     noise_std: float, denominator: float, rng: np.random.Generator,
                     row_norm: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """Opacus's privatized gradient: (Σ_i clip(g_i) + N(0, noise_std² I)) / denominator.

    ``row_norm`` = √(‖x_i‖² + 1) of the batch rows (computed if None). Returns (grad_w, grad_b).
    Spec: seed-003 §2.7 step 4.
    """
    if row_norm is None:
        row_norm = np.sqrt(np.einsum("ij,ij->i", XB, XB) + 1.0)
    r = sigmoid(XB @ w + b) - yB
    rc = r * clip_factors(np.abs(r) * row_norm, clip_norm)
    d = XB.shape[1]
    noise = rng.normal(0.0, noise_std, size=d + 1) if noise_std > 0 else np.zeros(d + 1)
    return (XB.T @ rc + noise[:d]) / denominator, float(rc.sum() + noise[d]) / denominator


def train_dp_sgd_logistic(X: np.ndarray, y: np.ndarray, *, noise_multiplier: float, clip_norm: float = 1.5,
                          lr: float = 0.01, batch_size: int = 1024, epochs: int = 50,
                          sampling_rule: str = "opacus", rng: np.random.Generator) -> DPSGDResult:
    """Train logistic regression with DP-SGD (Poisson sampling, per-sample clipping, Gaussian noise).

    Parameters
    ----------
    X, y
        Features (n, d) (for Algorithm 2: non-sensitive features plus the A column) and 0/1 labels.
    noise_multiplier
        σ/C; 0 gives non-private clipped SGD.
    clip_norm, lr, batch_size, epochs
        C = 1.5, 0.01, 1024 and 50 in the thesis.
    sampling_rule
        ``"opacus"`` (q = 1/⌈n/B⌉, what Opacus does) or ``"B/n"``; ⌈n/B⌉ steps per epoch either way.
    rng
        Source of the initialization, the batches and the noise.

    Spec: seed-003 §2.7 steps 3–4, §3.2.
    """
    if not clip_norm > 0:
        raise InvalidParameterError(f"clip_norm must be > 0; got {clip_norm}. The thesis uses 1.5.")
    if noise_multiplier < 0:
        raise InvalidParameterError(f"noise_multiplier must be >= 0; got {noise_multiplier}.")
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, d = X.shape
    q, steps = schedule(n, batch_size, epochs, rule=sampling_rule)
    expected = max(int(n * q), 1)  # Opacus: expected_batch_size = int(len(dataset) * sample_rate)
    row_norm = np.sqrt(np.einsum("ij,ij->i", X, X) + 1.0)
    w, b = torch_linear_init(d, rng=rng)
    sigma = noise_std(noise_multiplier, clip_norm)
    total = 0
    for _ in range(steps):
        idx = poisson_batch(n, q, rng=rng)
        total += idx.size
        gw, gb = private_gradient(np.take(X, idx, axis=0), y[idx], w, b, clip_norm=clip_norm, noise_std=sigma,
                                  denominator=expected, rng=rng, row_norm=row_norm[idx])
        w = w - lr * gw
        b = b - lr * gb
    return DPSGDResult(LogisticModel(w, float(b)), float(noise_multiplier), float(clip_norm), q, steps,
                       total / steps)
