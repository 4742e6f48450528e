"""Jagielski et al. (ICML 2019), "Differentially private fair learning": the in-processing
("DP-oracle-learner") method for equalized odds, as DP-FERMI's EO figures use it.

Spec: seed-004-dpfermi.md §8 (Jagielski row), §7.4 (a curve per ε).

The method: the Agarwal et al. (2018) reductions game for the equalized-odds constraints
γ_{a,y}(h) = P(h=1 | A=a, Y=y) − P(h=1 | Y=y), each as two one-sided constraints ±γ ≤ slack.
The auditor (λ-player) runs exponentiated gradient on λ ∈ R_+^{2K} with ‖λ‖₁ ≤ B, using noisy
constraint violations; the learner best-responds to λ with a cost-sensitive classification
oracle; the output is the uniform mixture of the learner's iterates.

What is ours where the paper is silent or impractical:

- learner: instead of the exponential mechanism over a finite class (exponential time), the
  cost-sensitive problem is reduced to weighted logistic regression (label 1{c¹_i < c⁰_i}, weight
  n·|c¹_i − c⁰_i|) and trained with DP-SGD (per-sample clipping C = 1, lr 0.1, batch 1024, Poisson
  sampling), warm-started from the previous round, ``learner_epochs`` epochs per round;
- auditor: the cell sums Σ_{i∈(a,y)} h_t(x_i) of the hard predictions get Laplace noise of scale
  2/ε_round (ℓ1 sensitivity 2: changing one s_i moves one record between two cells); the cell sizes
  are treated as public (spec §5 caveat 3); exponentiated-gradient step η = 2, slack 0;
- the curve: one point per bound B (``bounds``; B = 0 is the unconstrained private learner), since
  what the paper sweeps is not stated (spec §7.4);
- evaluation of the uniform mixture by its *expected* predictions P(h=1|x) = mean_t 1[h_t(x) = 1]
  (exact expected error and rates of the randomized classifier).

Privacy accounting: the budget is split in halves. The auditor's T Laplace releases are each
(ε/2T)-DP (basic composition: ε/2); the learner's T·epochs·⌈n/B⌉ DP-SGD steps have a PLD-calibrated
noise multiplier for (ε/2, δ). Basic composition gives (ε, δ)-DP w.r.t. all features (the
learner's per-sample gradients depend on s_i only through record i and the public λ; same batch
-coupling-free setting as plain DP-SGD). ε = ∞ adds no noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import dp_accounting as dpa
import numpy as np

from repro.errors import InvalidParameterError
from repro.learners.baselines import dpsgd_unit
from repro.learners.baselines._dpsgd import BatchedModels, cell_layout, prepare_features, train_batched_dp_sgd
from repro.learners.dp_sgd import calibrate_noise, schedule
from repro.learners.unit import Configured
from repro.privacy.accounting import dp_sgd_event
from repro.privacy.guarantee import STANDARDISED_FEATURES, Guarantee, Label, Neighbouring

__all__ = ["JagielskiResult", "train_jagielski_2019", "eo_cost_difference", "configure_learner", "guarantee"]


def guarantee(epsilon: float, delta: float) -> Guarantee:
    """Accounted by basic composition of the auditor's Laplace releases (ε/2) and the learner's DP-SGD
    (PLD, ε/2, δ) w.r.t. all features, with two public statistics: the cell sizes and the standardisation."""
    return Guarantee(epsilon, delta, Label.PUBLIC_STATISTICS, Neighbouring.ADD_OR_REMOVE_ONE,
                     accountant="Laplace (basic composition) + PLD (dp_accounting)",
                     caveat=f"cell sizes (group × label counts) treated as public; {STANDARDISED_FEATURES}")


@dataclass(frozen=True)
class JagielskiResult:
    """The learner's iterates (one :class:`BatchedModels` per round, G = number of bounds)."""

    iterates: tuple[BatchedModels, ...]
    bounds: tuple[float, ...]
    noise_multiplier: float
    laplace_epsilon_per_round: float
    sampling_probability: float
    steps: int

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """Expected prediction of each uniform mixture, shape (n, G)."""
        return np.mean([(m.decision(X) > 0).astype(float) for m in self.iterates], axis=0)

    @property
    def event(self):
        if self.noise_multiplier == 0:
            return None
        return dpa.ComposedDpEvent([
            dp_sgd_event(self.noise_multiplier, self.sampling_probability, self.steps),
            dpa.SelfComposedDpEvent(dpa.LaplaceDpEvent(1.0 / self.laplace_epsilon_per_round),
                                    len(self.iterates))])


def eo_cost_difference(y: np.ndarray, cell: np.ndarray, ref: np.ndarray, cell_ref: np.ndarray,
                       mu: np.ndarray, counts_c: np.ndarray, counts_r: np.ndarray) -> np.ndarray:
    """c¹_i − c⁰_i of the Lagrangian err(h) + Σ_c μ_c γ_c(h) for every sample and model (n, G).

    ``mu`` (G, K) = λ⁺ − λ⁻. err contributes (1[y_i=0] − 1[y_i=1])/n; γ_c contributes
    1[c_i = c]/n_c − 1[r_i = r(c)]/n_{r(c)}. Spec: seed-004 §8 (Agarwal et al. reduction).
    """
    n = y.size
    base = ((y == 0).astype(float) - (y == 1).astype(float)) / n
    mu_ref = np.zeros((counts_r.size, mu.shape[0]))
    np.add.at(mu_ref, cell_ref, mu.T)
    term = mu.T[cell] / counts_c[cell][:, None] - mu_ref[ref] / counts_r[ref][:, None]
    return base[:, None] + term


def configure_learner(*, n: int, epsilon: float, delta: float, rounds: int = 10, learner_epochs: int = 5,
                      batch_size: int = 1024, clip_norm: float = 1.0, lr: float = 0.1) -> Configured:
    """The learner's DP-SGD steps of a run on ``n`` rows (every round's, composed: T = rounds · learner_epochs ·
    ⌈n/B⌉) as the baselines' core runs them, calibrated to their share (ε/2, δ) of the budget; no penalty."""
    return dpsgd_unit.configure(n=n, epsilon=float(epsilon) / 2, delta=delta, epochs=rounds * learner_epochs,
                                batch_size=batch_size, clip_norm=clip_norm, lr=lr, penalized=False)


def train_jagielski_2019(X: np.ndarray, y: np.ndarray, s: np.ndarray, *, bounds: list[float] | tuple[float, ...],
                         epsilon: float, delta: float, rounds: int = 10, learner_epochs: int = 5,
                         batch_size: int = 1024, lr: float = 0.1, clip_norm: float = 1.0, eta: float = 2.0,
                         slack: float = 0.0, rng: np.random.Generator) -> JagielskiResult:
    """Run the private reductions game for equalized odds, one game per bound B (batched).

    Spec: seed-004 §8 (Jagielski et al. 2019 in-processing).
    """
    if rounds < 1 or learner_epochs < 1:
        raise InvalidParameterError(f"rounds and learner_epochs must be >= 1; got {rounds}, {learner_epochs}.")
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.int64)
    n = X.shape[0]
    layout = cell_layout(s, y, "eo")
    K = layout.n_cells
    counts_c = np.maximum(np.bincount(layout.cell, minlength=K).astype(float), 1)
    counts_r = np.maximum(np.bincount(layout.ref, minlength=layout.n_refs).astype(float), 1)
    B = np.asarray(bounds, dtype=float)
    G = B.size
    q, per_round = schedule(n, batch_size, learner_epochs, rule="B/n")
    steps = rounds * per_round
    private = not math.isinf(epsilon)
    z = calibrate_noise(epsilon / 2, delta, q, steps) if private else 0.0
    eps_round = epsilon / (2 * rounds) if private else math.inf
    features = prepare_features(X)                    # X's rows stored once for every round's training
    theta = np.zeros((G, 2 * K))                      # EG state: (+ constraints, − constraints)
    models = None
    iterates = []
    for _ in range(rounds):
        ex = np.exp(theta - theta.max(axis=1, keepdims=True))
        lam = B[:, None] * ex / (np.exp(-theta.max(axis=1, keepdims=True)) + ex.sum(axis=1, keepdims=True))
        mu = lam[:, :K] - lam[:, K:]
        diff = eo_cost_difference(y, layout.cell, layout.ref, layout.cell_ref, mu, counts_c, counts_r)
        labels = (diff < 0).astype(float)
        weights = n * np.abs(diff)
        models = train_batched_dp_sgd(features, y, layout, weights=np.zeros((G, K)), noise_multiplier=z,
                                      clip_norm=clip_norm, lr=lr, batch_size=batch_size, steps=per_round,
                                      rng=rng, models=models, labels=labels, sample_weight=weights)
        iterates.append(BatchedModels(models.w.copy(), models.b.copy()))
        h = (models.decision(X) > 0).astype(float)     # (n, G)
        sums = np.zeros((K, G))
        np.add.at(sums, layout.cell, h)
        if private:
            sums = sums + rng.laplace(0.0, 2.0 / eps_round, size=sums.shape)
        ref_sums = np.zeros((layout.n_refs, G))
        np.add.at(ref_sums, layout.cell_ref, sums)
        gamma = sums / counts_c[:, None] - ref_sums[layout.cell_ref] / counts_r[layout.cell_ref][:, None]
        theta[:, :K] += eta * (gamma.T - slack)
        theta[:, K:] += eta * (-gamma.T - slack)
    return JagielskiResult(tuple(iterates), tuple(float(b) for b in B), float(z),
                           float(eps_round), q, steps)
