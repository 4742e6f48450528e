"""PF-LD: Tran, Fioretto, Van Hentenryck (AAAI 2021b), "Differentially private and fair deep
learning: a Lagrangian dual approach", for logistic regression (one model per ε).

Spec: seed-004-dpfermi.md §8 (PF-LD row), §7.4 (one point per ε, a red star).

The method: constraints |E[h(X) | A=a] − E[h(X)]| ≤ α per group (demographic parity, 'PR' in the
authors' code) or the same conditioned on Y = y (equalized odds, 'Both'), with h the predicted
positive probability. Lagrangian ℓ(θ) + Σ_c λ_c·|gap_c(θ)|; the primal step is DP-SGD
(per-sample clipping + Gaussian noise) and the multipliers take a noisy dual ascent step
λ_c ← λ_c + s_λ·(noisy violation_c) once per epoch, as in ``NoisyFairModel.py``.

What is ours where the paper/code are silent:

- primal: Poisson-sampled DP-SGD (SGD, not Adam) with the closed-form gradient of the batch
  Lagrangian (:mod:`repro.learners.baselines._dpsgd`), C = 1, learning rate 0.1, batch 1024;
- dual: at the end of each epoch the *full training set's* cell sums Σ_{i∈c} F(x_i) get Gaussian
  noise N(0, z_dual²) (one record changes one cell sum by at most 1: ℓ2 sensitivity 1, add/remove), the
  cell sizes are treated as public (spec §5 caveat 3), violation_c = |noisy mean_c − noisy
  mean_{r(c)}|, α = 0, dual step s_λ = 0.5, λ_c ≥ 0, λ starts at 0;
- output: the last primal iterate (one model per ε).

Privacy accounting (dp_accounting, RDP): the run is the composition of T Poisson-subsampled
Gaussian steps (multiplier z, q = B/n) and one full-batch Gaussian mechanism (multiplier z_dual)
per epoch; z_dual is calibrated so that the dual releases alone spend a share 0.2 of ε (ours), then z
so that the composition is (ε, δ)-DP w.r.t. all features. The same
coupling caveat as the other DP-SGD baselines applies to the primal step.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import dp_accounting as dpa
import numpy as np

from repro.errors import InvalidParameterError
from repro.learners.baselines import dpsgd_unit
from repro.learners.baselines._dpsgd import BatchedModels, cell_layout, train_batched_dp_sgd
from repro.learners.dp_sgd import schedule
from repro.learners.logistic import LogisticModel, sigmoid
from repro.learners.unit import Configured
from repro.privacy.accounting import dp_sgd_event
from repro.privacy.accounting import epsilon as accounted_epsilon
from repro.privacy.guarantee import STANDARDISED_FEATURES, Guarantee, Label, Neighbouring

__all__ = ["PFLDResult", "train_pf_ld", "pf_ld_event", "calibrate_pf_ld", "configure_primal", "guarantee"]


def guarantee(epsilon: float, delta: float) -> Guarantee:
    """Nominal: the RDP accountant's (ε, δ) of the primal DP-SGD steps and the noisy dual releases w.r.t. all
    features, but the Lagrangian term couples a batch's records through the group means (only approximately
    bounded by per-sample clipping) and the dual step uses the cell sizes as public."""
    return Guarantee(epsilon, delta, Label.NOMINAL, Neighbouring.ADD_OR_REMOVE_ONE,
                     accountant="RDP (dp_accounting): subsampled Gaussian + Gaussian dual releases",
                     caveat="the Lagrangian couples a batch's records through the group means (per-sample clipping "
                            f"bounds it only approximately); cell sizes treated as public; {STANDARDISED_FEATURES}")


@dataclass(frozen=True)
class PFLDResult:
    """The model, the final multipliers, z, q, T and the number of dual steps."""

    model: LogisticModel
    multipliers: np.ndarray
    noise_multiplier: float
    dual_noise_multiplier: float
    sampling_probability: float
    steps: int
    dual_steps: int

    @property
    def event(self):
        if self.noise_multiplier == 0:
            return None
        return pf_ld_event(self.noise_multiplier, self.sampling_probability, self.steps, self.dual_steps,
                           self.dual_noise_multiplier)


def pf_ld_event(z: float, q: float, steps: int, dual_steps: int, z_dual: float) -> dpa.DpEvent:
    """Primal DP-SGD steps (multiplier z) composed with ``dual_steps`` full-batch Gaussian releases
    (multiplier ``z_dual``)."""
    return dpa.ComposedDpEvent([dp_sgd_event(z, q, steps),
                                dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(z_dual), int(dual_steps))])


def _calibrate(make_event, target: float, delta: float, *, rtol: float = 1e-5) -> float:
    """Smallest multiplier (to a relative ``rtol``) whose event has ε ≤ ``target`` at ``delta`` under the project's
    RDP accountant (:func:`repro.privacy.accounting.epsilon`, integer orders), the ε the run reports."""
    def eps(z: float) -> float:
        return accounted_epsilon(make_event(z), delta, accountant="rdp")

    lo, hi = 0.05, 1.0
    while eps(hi) > target:
        lo, hi = hi, 2.0 * hi
    while eps(lo) <= target and lo > 1e-6:
        hi, lo = lo, 0.5 * lo
    while hi - lo > rtol * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if eps(mid) <= target else (mid, hi)
    return float(hi)


@functools.lru_cache(maxsize=128)
def calibrate_pf_ld(epsilon: float, delta: float, q: float, steps: int, dual_steps: int,
                    dual_share: float = 0.2) -> tuple[float, float]:
    """(z, z_dual) making :func:`pf_ld_event` (ε, δ)-DP under the project's RDP accountant ((0, 0) for ε = ∞).

    The dual releases alone are calibrated to (dual_share·ε, δ); the primal multiplier z is then
    the smallest making the composition (ε, δ)-DP. RDP rather than PLD: the PLD of un-subsampled
    Gaussian releases at these multipliers is very slow to discretize; RDP is slightly conservative.
    """
    if math.isinf(epsilon):
        return 0.0, 0.0
    if not epsilon > 0 or not 0 < delta < 1 or not 0 < dual_share < 1:
        raise InvalidParameterError(
            f"need epsilon > 0, delta in (0, 1), dual_share in (0, 1); got {epsilon}, {delta}, {dual_share}.")
    z_dual = _calibrate(lambda zd: dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(zd), int(dual_steps)),
                        dual_share * epsilon, delta)
    z = _calibrate(lambda zz: pf_ld_event(zz, q, steps, dual_steps, z_dual), epsilon, delta)
    return z, z_dual


def configure_primal(*, n: int, epsilon: float, delta: float, epochs: int = 200, batch_size: int = 1024,
                     clip_norm: float = 1.0, lr: float = 0.1, dual_share: float = 0.2) -> Configured:
    """The primal DP-SGD steps of a PF-LD run on ``n`` rows as the baselines' core runs them: z from
    :func:`calibrate_pf_ld` (the whole mechanism at (ε, δ)), (q, T) of the core, and the primal steps' own event;
    the guarantee carries the primal part's PLD ε at δ (the dual releases spend the rest of ε)."""
    q, steps = schedule(n, batch_size, epochs, rule="B/n")
    z, _ = calibrate_pf_ld(float(epsilon), float(delta), q, steps, int(epochs), float(dual_share))
    return dpsgd_unit.configure(n=n, epsilon=epsilon, delta=delta, noise_multiplier=z, epochs=epochs,
                                batch_size=batch_size, clip_norm=clip_norm, lr=lr)


def train_pf_ld(X: np.ndarray, y: np.ndarray, s: np.ndarray, *, epsilon: float, delta: float,
                fairness: str = "dp", epochs: int = 200, batch_size: int = 1024, lr: float = 0.1,
                clip_norm: float = 1.0, dual_lr: float = 0.5, dual_share: float = 0.2,
                rng: np.random.Generator) -> PFLDResult:
    """Train PF-LD logistic regression: DP-SGD primal, noisy dual ascent once per epoch.

    Spec: seed-004 §8 (PF-LD).
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    n = X.shape[0]
    q, steps = schedule(n, batch_size, epochs, rule="B/n")
    _, per_epoch = schedule(n, batch_size, 1, rule="B/n")
    z, z_dual = calibrate_pf_ld(float(epsilon), float(delta), q, steps, int(epochs), float(dual_share))
    layout = cell_layout(s, y, fairness)
    counts_c = np.bincount(layout.cell, minlength=layout.n_cells).astype(float)
    counts_r = np.bincount(layout.ref, minlength=layout.n_refs).astype(float)
    lam = np.zeros(layout.n_cells)

    def dual(epoch: int, models: BatchedModels) -> np.ndarray:
        F = sigmoid(X @ models.w[:, 0] + models.b[0])
        sums = np.bincount(layout.cell, weights=F, minlength=layout.n_cells)
        if z_dual > 0:
            sums = sums + rng.normal(0.0, z_dual, size=sums.shape)
        ref_sums = np.zeros(layout.n_refs)
        np.add.at(ref_sums, layout.cell_ref, sums)
        viol = np.abs(sums / np.maximum(counts_c, 1) - (ref_sums / np.maximum(counts_r, 1))[layout.cell_ref])
        lam[:] = np.maximum(0.0, lam + dual_lr * viol)
        return lam[None, :].copy()

    models = train_batched_dp_sgd(X, y, layout, weights=np.zeros((1, layout.n_cells)), noise_multiplier=z,
                                  clip_norm=clip_norm, lr=lr, batch_size=batch_size, steps=steps, rng=rng,
                                  on_epoch=dual, steps_per_epoch=per_epoch)
    return PFLDResult(LogisticModel(models.w[:, 0].copy(), float(models.b[0])), lam.copy(), float(z),
                      float(z_dual), q,
                      steps, int(epochs))
