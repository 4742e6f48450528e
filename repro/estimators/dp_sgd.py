"""DP-SGD logistic regression (the thesis's base classifier) as a scikit-learn estimator.

Its ``fit`` is the DP-SGD learner unit's :func:`repro.learners.dp_sgd_unit.fit` (compiled; the reference
:func:`repro.learners.dp_sgd.train_dp_sgd_logistic`) (Opacus semantics; spec seed-003 §2.7
steps 3–4, §3.2). With ``epsilon`` the noise multiplier is calibrated with the PLD accountant for the
fit's actual (q, T) (spec §10 P4), as ``studies/thesis/part1_tables`` does; with ``noise_multiplier``
that multiplier is used and its ε reported.
"""

from __future__ import annotations

import numpy as np

from repro.errors import InvalidParameterError
from repro.estimators._base import LinearFairClassifierBase, as_generator, fitted_guarantee
from repro.learners import dp_sgd_unit as unit
from repro.privacy.guarantee import NON_PRIVATE

__all__ = ["DPSGDLogisticClassifier"]


class DPSGDLogisticClassifier(LinearFairClassifierBase):
    """Logistic regression trained with DP-SGD (per-sample clipping, Poisson sampling, Gaussian noise).

    Parameters (keyword-only)
    -------------------------
    epsilon
        Target ε at ``delta``: the noise multiplier is calibrated for the fit's (q, T). Give this or
        ``noise_multiplier``, not both.
    noise_multiplier
        σ/C used as is (0: non-private clipped SGD).
    delta, clip_norm, lr, batch_size, epochs, sampling_rule
        δ = 1e-5, C = 1.5, 0.01, 1024, 50 and ``"opacus"`` (q = 1/⌈n/B⌉) as in the thesis.
    random_state
        int, ``numpy.random.Generator`` (its stream continues) or None.

    ``sensitive_features`` (optional): when given, the model's input is [X, s] (Algorithm 2's base
    classifier, spec §2.7 step 3) and ``predict`` needs them too.

    Fitted attributes: ``model_``, ``coef_``, ``intercept_``, ``noise_multiplier_``,
    ``sampling_probability_``, ``steps_``, ``configured_`` (the unit's :class:`~repro.learners.unit.Configured`),
    ``privacy_guarantee_`` (accounted, add/remove-one, for the
    rows of X as given: statistics used to prepare X, e.g. standardisation, are not covered).
    """

    #: the learner unit whose ``fit`` this estimator's ``fit`` is
    _unit = unit

    def __init__(self, *, epsilon: float | None = None, noise_multiplier: float | None = None,
                 delta: float = 1e-5, clip_norm: float = 1.5, lr: float = 0.01, batch_size: int = 1024,
                 epochs: int = 50, sampling_rule: str = "opacus",
                 random_state: int | np.random.Generator | None = None) -> None:
        self.epsilon = epsilon
        self.noise_multiplier = noise_multiplier
        self.delta = delta
        self.clip_norm = clip_norm
        self.lr = lr
        self.batch_size = batch_size
        self.epochs = epochs
        self.sampling_rule = sampling_rule
        self.random_state = random_state

    @property
    def _predict_needs_groups(self) -> bool:  # type: ignore[override]
        return getattr(self, "uses_sensitive_features_", False)

    def fit(self, X, y, *, sensitive_features=None) -> DPSGDLogisticClassifier:
        """Train on (X, y) (or [X, s] when ``sensitive_features`` is given)."""
        if (self.epsilon is None) == (self.noise_multiplier is None):
            raise InvalidParameterError("give exactly one of epsilon (calibrated) and noise_multiplier; "
                                        f"got epsilon={self.epsilon}, noise_multiplier={self.noise_multiplier}.")
        X, y, s = self._fit_inputs(X, y, sensitive_features, required=False)
        self.uses_sensitive_features_ = s is not None
        if s is not None:
            X = np.hstack([X, s[:, None].astype(np.float64)])
        res, c = unit.fit(X, y, epsilon=None if self.epsilon is None else float(self.epsilon),
                          noise_multiplier=None if self.noise_multiplier is None else float(self.noise_multiplier),
                          delta=float(self.delta), rng=as_generator(self.random_state), clip_norm=float(self.clip_norm),
                          lr=float(self.lr), batch_size=int(self.batch_size), epochs=int(self.epochs),
                          sampling_rule=self.sampling_rule)
        self._set_model(res.model)
        self.configured_ = c
        self.noise_multiplier_ = res.noise_multiplier
        self.sampling_probability_ = res.sampling_probability
        self.steps_ = res.steps
        self.privacy_guarantee_ = NON_PRIVATE if c.guarantee is NON_PRIVATE else fitted_guarantee(c.guarantee)
        return self

    def _design(self, X, sensitive_features) -> np.ndarray:
        X, s = self._predict_inputs(X, sensitive_features)
        return X if s is None else np.hstack([X, s[:, None].astype(np.float64)])
