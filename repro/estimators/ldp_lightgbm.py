"""LDP pre-processing of the sensitive attribute + LightGBM (thesis Part II, Figures 5.1–5.10).

Spec: seed-003-thesis.md §5, §6.1–6.3, L6 and L9, as ``studies/thesis/ldp_figures`` does: only the
training set's sensitive attribute is perturbed (OPT: Theorem 14 for k = 2, problem (5.5.9) for
k > 2; GRR; Subset Selection) and appended one-hot (multi-hot for SS) to the non-sensitive features;
LightGBM is fitted on that; ``predict`` appends the *true* attribute one-hot (the test set is not
perturbed).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from repro.errors import InvalidParameterError
from repro.estimators._base import FairClassifierBase, as_generator
from repro.fairness.data_fairness import group_stats
from repro.privacy.guarantee import NON_PRIVATE, Guarantee
from repro.privacy.ldp_mechanisms import (
    grr_matrix,
    ldp_epsilon,
    optimal_binary_matrix,
    optimal_nonbinary_matrix,
    perturb,
    subset_selection,
    zeta_min,
)
from repro.privacy.ldp_mechanisms import guarantee as ldp_guarantee

__all__ = ["LDPLightGBMClassifier", "MECHANISMS"]

MECHANISMS = ("OPT", "GRR", "SS", "none")
_PROTECTS = "each training record's sensitive attribute (features and labels are used as they are)"
#: what OPT's matrix is built from (Theorem 14: the minority group; problem (5.5.9): P(A), P(Y=1|A)), all of fit's data
_OPT_STATISTICS = "the training data's group statistics (the minority group; for k > 2 P(A) and P(Y=1|A))"


class LDPLightGBMClassifier(FairClassifierBase):
    """LightGBM trained on features plus an ε-LDP report of the sensitive attribute.

    Parameters (keyword-only)
    -------------------------
    mechanism
        ``"OPT"`` (the thesis's optimal mechanism), ``"GRR"``, ``"SS"`` (Subset Selection) or
        ``"none"`` (the true attribute: the non-private baseline).
    epsilon
        The LDP budget of each report.
    zeta
        Non-binary OPT only: ``"one"`` (ζ = 1, the authors' code) or ``"min"`` (ζ_min + 1e-6, the text).
    attribute_distribution
        Non-binary OPT only: (p, p1) = (P(A = i), P(Y = 1 | A = i)) the mechanism is optimized for;
        None = the training data's (the study uses the full table's; public-statistics caveat either way).
    n_estimators, max_depth, learning_rate
        LightGBM's (Adult: 1100, 38, 0.0226; spec §6.1).
    lightgbm_random_state
        LightGBM's seed; None = one integer drawn from ``random_state``'s generator after the perturbation.
    random_state
        int, ``numpy.random.Generator`` (its stream continues) or None: the mechanism's randomness.

    Fitted: ``model_`` (the LightGBM classifier), ``mechanism_matrix_`` (k × k, None for SS / none),
    ``privacy_guarantee_`` (ε-LDP of the attribute; OPT's matrix depends on group statistics of the data,
    so OPT carries the public-statistics caveat).
    """

    _predict_needs_groups = True

    def __init__(self, *, mechanism: str = "OPT", epsilon: float = 1.0, zeta: str = "one",
                 attribute_distribution: tuple | None = None, n_estimators: int = 1100, max_depth: int = 38,
                 learning_rate: float = 0.02255696731716368, lightgbm_random_state: int | None = None,
                 random_state: int | np.random.Generator | None = None) -> None:
        self.mechanism = mechanism
        self.epsilon = epsilon
        self.zeta = zeta
        self.attribute_distribution = attribute_distribution
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.learning_rate = learning_rate
        self.lightgbm_random_state = lightgbm_random_state
        self.random_state = random_state

    def _matrix(self, a: np.ndarray, y: np.ndarray, k: int, eps: float) -> np.ndarray | None:
        if self.mechanism == "GRR":
            return grr_matrix(k, eps)
        if self.mechanism != "OPT":
            return None
        if k == 2:  # the minority of the training split, as the authors' code
            return optimal_binary_matrix(eps, int(np.argmin(np.bincount(a, minlength=2))))
        if self.zeta not in ("one", "min"):
            raise InvalidParameterError(f"zeta must be 'one' or 'min'; got {self.zeta!r}.")
        p, p1 = (group_stats(a, y, k)[:2] if self.attribute_distribution is None
                 else (np.asarray(v, dtype=float) for v in self.attribute_distribution))
        zeta = 1.0 if self.zeta == "one" else min(1.0, zeta_min(p, eps) + 1e-6)
        return optimal_nonbinary_matrix(p, p1, eps, zeta=zeta).matrix

    def fit(self, X, y, *, sensitive_features=None) -> LDPLightGBMClassifier:
        """Perturb the attribute, append its encoding to X, fit LightGBM."""
        import lightgbm as lgb

        if self.mechanism not in MECHANISMS:
            raise InvalidParameterError(f"mechanism must be one of {', '.join(MECHANISMS)}; got {self.mechanism!r}.")
        eps = float(self.epsilon)
        if self.mechanism != "none" and not eps > 0:
            raise InvalidParameterError(f"epsilon must be > 0; got {self.epsilon}.")
        X, y, a = self._fit_inputs(X, y, sensitive_features)
        k = self.groups_.size
        rng = as_generator(self.random_state)
        eye = np.eye(k, dtype=np.float32)
        self.mechanism_matrix_ = self._matrix(a, y, k, eps)
        if self.mechanism == "none":
            enc = eye[a]
        elif self.mechanism == "SS":
            enc = subset_selection(a, k, eps, rng=rng).astype(np.float32)
        else:
            enc = eye[perturb(a, self.mechanism_matrix_, rng=rng)]
        seed = (int(rng.integers(2**31 - 1)) if self.lightgbm_random_state is None
                else int(self.lightgbm_random_state))
        self.model_ = lgb.LGBMClassifier(objective="binary", n_estimators=int(self.n_estimators),
                                         max_depth=int(self.max_depth), learning_rate=float(self.learning_rate),
                                         random_state=seed, n_jobs=1, verbose=-1)
        self.model_.fit(np.hstack([X, enc]), y)
        self.privacy_guarantee_ = self._guarantee(eps)
        return self

    def _guarantee(self, eps: float) -> Guarantee:
        """:func:`repro.privacy.ldp_mechanisms.guarantee` at the matrix's exact ε; the estimator names what it
        protects more precisely (the training records' attribute; the test rows are not perturbed)."""
        if self.mechanism == "none" or math.isinf(eps):
            return NON_PRIVATE
        if self.mechanism == "SS":
            return replace(ldp_guarantee(eps), protects=_PROTECTS, accountant="Subset Selection (exact)")
        eps_matrix = ldp_epsilon(self.mechanism_matrix_)
        if self.mechanism == "GRR":
            return replace(ldp_guarantee(eps_matrix), protects=_PROTECTS)
        return replace(ldp_guarantee(eps_matrix, statistics=_OPT_STATISTICS), protects=_PROTECTS)

    def _design(self, X, sensitive_features) -> np.ndarray:
        X, a = self._predict_inputs(X, sensitive_features)
        return np.hstack([X, np.eye(self.groups_.size, dtype=np.float32)[a]])

    def predict_proba(self, X, *, sensitive_features=None) -> np.ndarray:
        """(n, 2) LightGBM probabilities on [X, one-hot of the true attribute]."""
        X = self._design(X, sensitive_features)
        return self.model_.predict_proba(X)

    def predict(self, X, *, sensitive_features=None) -> np.ndarray:
        """LightGBM's labels (as the study: ``model.predict``), mapped to ``classes_``."""
        X = self._design(X, sensitive_features)
        return self.classes_[self.model_.predict(X).astype(np.int64)]
