"""FairProjection (Alghamdi et al. 2022) as a scikit-learn meta-estimator (non-private).

Spec: seed-003-thesis.md §6.4: the base model's probabilities are smoothed and projected onto the
SP or MEO constraints at tolerance α by the dual ADMM of :mod:`repro.fairness.fair_projection`, as
``studies/thesis/fairprojection_tables`` does (group memberships as one-hot of the true s).
"""

from __future__ import annotations

import copy

import numpy as np
from sklearn.base import clone
from sklearn.ensemble import GradientBoostingClassifier

from repro.estimators._base import FairClassifierBase, as_generator
from repro.fairness import fair_projection as fp
from repro.privacy.guarantee import NON_PRIVATE

__all__ = ["FairProjectionClassifier"]


class FairProjectionClassifier(FairClassifierBase):
    """A base classifier projected onto group-fairness constraints (KL or cross-entropy projection).

    Parameters (keyword-only)
    -------------------------
    estimator
        Unfitted base classifier with ``predict_proba``, cloned and fitted on (X, y) in ``fit``;
        None = ``GradientBoostingClassifier(random_state=42)`` (the study's base model).
    constraint
        ``"sp"`` (statistical parity) or ``"meo"`` (mean equalized odds).
    tolerance
        α ≥ 0, the relative tolerance of the constraints.
    divergence
        ``"kl"`` (KL(h‖P)) or ``"ce"`` (cross-entropy, KL(P‖h)).
    max_iter, tol, reg
        ADMM iterations (500), early-stop tolerance (0 = never), regularizer (None = 1/√n, the reference).
    random_state
        Source of the constraint jitter N(0, 1e-10) of the reference code (int, Generator or None).

    The groups must appear in ``predict`` too (the constraint matrix G(x) of a point uses its group).
    ``predict`` and ``predict_proba`` jitter G from the generator state saved at the end of ``fit``, so
    repeated calls agree (the first equals the study's draw). Fitted: ``estimator_``, ``lam_`` (dual
    solution), ``admm_``, ``n_iter_``, ``p_ys_`` (training P(Y, S)), ``privacy_guarantee_`` (non-private).
    """

    _predict_needs_groups = True

    def __init__(self, *, estimator=None, constraint: str = "sp", tolerance: float = 0.05, divergence: str = "kl",
                 max_iter: int = 500, tol: float = 0.0, reg: float | None = None,
                 random_state: int | np.random.Generator | None = None) -> None:
        self.estimator = estimator
        self.constraint = constraint
        self.tolerance = tolerance
        self.divergence = divergence
        self.max_iter = max_iter
        self.tol = tol
        self.reg = reg
        self.random_state = random_state

    def fit(self, X, y, *, sensitive_features=None) -> FairProjectionClassifier:
        """Fit the base model on (X, y), then solve the projection's dual on the same points."""
        X, y, s = self._fit_inputs(X, y, sensitive_features)
        base = GradientBoostingClassifier(random_state=42) if self.estimator is None else self.estimator
        self.estimator_ = clone(base).fit(X, y)
        k = self.groups_.size
        probs = fp.smooth(self.estimator_.predict_proba(X))
        self.p_ys_ = fp.group_marginals(y, s, 2, k)
        rng = as_generator(self.random_state)
        G = fp.build_constraints(self.constraint, float(self.tolerance), probs, fp.one_hot(s, k), self.p_ys_, rng=rng)
        self.admm_ = fp.admm(G, probs, divergence=self.divergence, max_iter=int(self.max_iter),
                             reg=self.reg, tol=float(self.tol))
        self.lam_ = self.admm_.lam
        self.n_iter_ = self.admm_.iterations
        self.train_violation_ = fp.constraint_violation(G, fp.predict_projected(probs, G, self.lam_, self.divergence))
        self._predict_rng_state_ = copy.deepcopy(rng.bit_generator.state)
        self._predict_bit_generator_ = type(rng.bit_generator)
        self.privacy_guarantee_ = NON_PRIVATE
        return self

    def predict_proba(self, X, *, sensitive_features=None) -> np.ndarray:
        """(n, 2) probabilities of the projected classifier h(·|x, s)."""
        X, s = self._predict_inputs(X, sensitive_features)
        probs = fp.smooth(self.estimator_.predict_proba(X))
        bitgen = self._predict_bit_generator_()
        bitgen.state = copy.deepcopy(self._predict_rng_state_)
        G = fp.build_constraints(self.constraint, float(self.tolerance), probs, fp.one_hot(s, self.groups_.size),
                                 self.p_ys_, rng=np.random.Generator(bitgen))
        return fp.predict_projected(probs, G, self.lam_, self.divergence)
