"""Private-FairNR's learner unit (Cummings et al. 2019, Algorithms 2–3): what a run is calibrated to (its
entrance) and the ε it reports (its exit), in one object, as the other learner units do for their runs.

``corrected``: every one of the k = m·T + T exponential-mechanism steps (the learner's FTPL draws and the
auditor's best responses) runs at the one ε₀ whose optimal k-fold composition meets (ε, δ); its accounted ε is
that composition. ``paper``: Algorithm 3's printed ε′ = ε / (((2+C)/n)·√(mT ln(1/δ))) for the learner, a
noiseless auditor: its ε is ∞ (the auditor's release is not private), and :meth:`FairNRConfigured.learner_epsilon`
bounds the learner's releases alone by heterogeneous advanced composition at their true sensitivity.
``nonprivate``: no noise. Spec: seed-000-002-compat.md §5.4–§5.7, Lemma 4, DEC-17.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from repro.errors import InvalidParameterError
from repro.privacy.composition import (
    calibrate_step_epsilon,
    heterogeneous_composition_epsilon,
    pure_composition_epsilon,
)
from repro.privacy.guarantee import Guarantee
from repro.theory import fairnr as fn
from repro.theory.sample_complexity import alg3_paper_eps_prime

__all__ = ["FairNRConfigured", "configure"]


@dataclass(frozen=True)
class FairNRConfigured:
    """A Private-FairNR run's calibration on ``n`` records at the target (ε, δ), T rounds of m learner steps.

    ``k_steps`` private steps; ``eps_step`` the calibrated ε₀ (``corrected``; None otherwise); ``eps_prime`` the
    paper's ε′ (its learner noise is Lap(1/ε′)); ``guarantee`` the run's claim (:func:`repro.theory.fairnr.guarantee`).
    """

    mode: str
    n: int
    epsilon: float
    delta: float
    T: int
    m: int
    C: float
    k_steps: int
    eps_prime: float
    eps_step: float | None
    guarantee: Guarantee

    def accounted_epsilon(self) -> float:
        """ε the run is accounted at δ: the exact composition of its k ε₀-steps (``corrected``), else ∞."""
        if self.mode == "corrected":
            return pure_composition_epsilon(self.eps_step, self.k_steps, self.delta)
        return math.inf

    def learner_epsilon(self, lambdas: np.ndarray) -> float:
        """ε of the learner's releases alone, given the auditor's duals λ_t of the run: the accounted ε
        (``corrected``); for ``paper`` heterogeneous advanced composition of its m·(T − 1) Laplace releases at their
        true per-round sensitivity times ε′ (the first round's loss is data-free); ∞ without noise."""
        if self.mode == "corrected":
            return self.accounted_epsilon()
        if self.mode != "paper":
            return math.inf
        lam_cum = np.concatenate([[0.0], np.cumsum(lambdas)[:-1]])
        sens = np.array([fn.cumulative_loss_sensitivity(self.n, t, lam_cum[t]) for t in range(1, self.T)])
        return heterogeneous_composition_epsilon(np.repeat(sens * self.eps_prime, self.m), self.delta)

    @property
    def reported_step_epsilon(self) -> float:
        """The per-step ε the trial records: ε₀ (``corrected``), the paper's learner-step ε′·(2+C)/n, or NaN."""
        if self.mode == "corrected":
            return float(self.eps_step)
        return self.eps_prime * (2.0 + self.C) / self.n if self.mode == "paper" else math.nan


def configure(mode: str, *, n: int, epsilon: float, delta: float, T: int, m: int, C: float) -> FairNRConfigured:
    """Calibrate a Private-FairNR run of ``mode`` (module docstring) on ``n`` records."""
    if mode not in fn.MODES:
        raise InvalidParameterError(f"mode must be one of {fn.MODES}; got {mode!r}.")
    k = fn.corrected_k_steps(T, m)
    eps_step = calibrate_step_epsilon(epsilon, delta, k) if mode == "corrected" else None
    return FairNRConfigured(mode, int(n), float(epsilon), float(delta), int(T), int(m), float(C), k,
                            alg3_paper_eps_prime(n, epsilon, delta, T, m, C), eps_step,
                            fn.guarantee(mode, epsilon, delta))
