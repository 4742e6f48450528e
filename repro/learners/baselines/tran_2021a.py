"""Tran, Dinh, Fioretto (NeurIPS 2021a), "Differentially private ERM under the fairness lens",
adapted to demographic parity as DP-FERMI's figures use it.

Spec: seed-004-dpfermi.md §8 (Tran 2021a row), §7.4 (a curve over its own γ grid).

What the paper does: DP-SGD (per-sample clipping + Gaussian noise) on the loss plus a fairness
penalty. Their mitigation targets accuracy/excess-risk disparity; **how DP-FERMI adapted it to
demographic parity is not specified** (spec §8).

What is ours where the papers are silent:

- the penalty is the spec §8 suggestion γ · Σ_a |mean_{i∈B, s_i=a} F(x_i) − mean_{i∈B} F(x_i)| on
  the Poisson batch B (F = σ(θᵀx̃), soft predictions), differentiated in closed form
  (:mod:`repro.learners.baselines._dpsgd`);
- hyperparameters: clip norm C = 1, learning rate 0.1, batch 1024 with Poisson sampling q = B/n,
  PyTorch ``nn.Linear`` initialization, last iterate; not tuned to any reported number;
- the γ grid comes from the experiment file (the released grids are hand-picked per (dataset, ε)).

Privacy accounting (the core unit :mod:`repro.learners.baselines.dpsgd_unit`): the noise multiplier z is
calibrated with the PLD accountant so that T steps of the
Poisson-subsampled Gaussian mechanism (q = B/n) are (ε, δ)-DP with respect to **all features**
(add/remove adjacency), which implies DP w.r.t. the sensitive attribute. Caveat: the penalty
couples samples of a batch through the group means, which per-sample clipping bounds only
approximately (stated in ``_dpsgd``). All γ models are trained together on the same batches; each is
one DP-SGD run with that guarantee. ε = ∞ gives z = 0 (non-private, clipped SGD).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from repro.learners.baselines import dpsgd_unit
from repro.learners.logistic import LogisticModel
from repro.learners.unit import Configured
from repro.privacy.guarantee import Guarantee

__all__ = ["Tran2021aResult", "train_tran_2021a", "guarantee"]


def guarantee(epsilon: float, delta: float) -> Guarantee:
    """Nominal: the DP-SGD accountant's (ε, δ) w.r.t. all features, but the fairness penalty couples the
    records of a batch through the group means, which per-sample clipping bounds only approximately
    (:func:`repro.learners.baselines.dpsgd_unit.guarantee` of the penalized core)."""
    return dpsgd_unit.guarantee(epsilon, delta, penalized=True)


@dataclass(frozen=True)
class Tran2021aResult:
    """One model per γ, the noise multiplier, q and T (the DP-SGD event of each model), and the core unit's
    :class:`~repro.learners.unit.Configured`."""

    models: tuple[LogisticModel, ...]
    gammas: tuple[float, ...]
    noise_multiplier: float
    sampling_probability: float
    steps: int
    configured: Configured | None = None

    @property
    def event(self):
        """Privacy cost of each model (None when non-private)."""
        return None if self.configured is None else self.configured.event


def train_tran_2021a(X: np.ndarray, y: np.ndarray, s: np.ndarray, *, gammas: list[float] | tuple[float, ...],
                     epsilon: float, delta: float, epochs: int = 200, batch_size: int = 1024,
                     lr: float = 0.1, clip_norm: float = 1.0, fairness: str = "dp",
                     rng: np.random.Generator) -> Tran2021aResult:
    """Train one DP-SGD logistic model per penalty weight γ (all on the same Poisson batches): the baselines'
    DP-SGD core unit (:func:`repro.learners.baselines.dpsgd_unit.fit`) at (ε, δ).

    ``fairness="eo"`` uses the cells (a, y) against Y = y instead (not used by the figures).
    Spec: seed-004 §8 (Tran 2021a).
    """
    models, c = dpsgd_unit.fit(X, y, s, epsilon=epsilon, delta=delta, rng=rng, gammas=gammas, epochs=epochs,
                               batch_size=batch_size, lr=lr, clip_norm=clip_norm, fairness=fairness)
    return Tran2021aResult(models, tuple(float(v) for v in gammas), c.noise_multiplier, c.sampling_probability,
                           c.steps, c)
