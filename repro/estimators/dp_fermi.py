"""DP-FERMI (Lowy et al., ICLR 2023) in its three variants as a scikit-learn estimator.

Its ``fit`` is the learner unit's :func:`repro.learners.dp_fermi_unit.fit`, the calibration and compiled engine the
studies train (spec seed-004-dpfermi.md §4.3–§4.4, §5):

``reference``
    The authors' code path (:data:`repro.learners.dp_fermi.REFERENCE`): σ_θ, σ_W of Theorem 3.3
    (``noise_scope="sensitive"``, part (a)) or the thesis's all-feature formulas (``"all"``, as
    ``studies/thesis/part1_tables``), δ = 1/n² unless given. The ε is **nominal**.
``strict``
    :data:`STRICT_SENSITIVE`: noise on the s-dependent parts only, one noise multiplier calibrated with
    the exact strict accountant (:mod:`repro.privacy.strict_accountant`: Poisson sampling with the sampling
    bit revealed, no add/remove amplification): ε w.r.t. the sensitive attribute.
``strict-all``
    :data:`STRICT_ALL_FEATURES`: per-sample clipping of the joint (θ, W) gradient, Poisson sampling:
    ε w.r.t. every feature (add/remove-one).

Both strict variants treat P̂_S (the group shares used by the ERMI) as public: *public-statistics caveat*.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from repro.errors import InvalidParameterError
from repro.estimators._base import LinearFairClassifierBase, as_generator, fitted_guarantee
from repro.learners import dp_fermi_unit as unit
from repro.privacy.dpfermi_noise import group_floor
from repro.privacy.guarantee import NON_PRIVATE, Guarantee

__all__ = ["DPFermiClassifier", "VARIANTS"]

VARIANTS = tuple(unit.VARIANTS)


class DPFermiClassifier(LinearFairClassifierBase):
    """Fair logistic regression by DP-FERMI (noisy two-timescale DP-SGDA on BCE + λ·ERMI).

    Parameters (keyword-only)
    -------------------------
    variant
        ``"reference"`` (default), ``"strict"`` or ``"strict-all"`` (module docstring).
    epsilon, delta
        Privacy target; ``delta=None`` gives 1/n² (the authors' choice). ``epsilon=math.inf``: no noise.
    lam
        λ, the weight of the ERMI regularizer.
    fairness
        ``"dp"`` (demographic parity) or ``"eo"`` (equalized odds).
    epochs, batch_size, lr_theta, lr_w
        200, 1024, 0.005, 0.01 as the DP-FERMI study.
    clip_norm, w_radius
        reference: L and D (5, 5); strict variants: the per-sample clip C (None = the engine's 1.0 / 1.5).
    noise_scope
        reference only: ``"sensitive"`` (Theorem 3.3(a)) or ``"all"`` (the thesis's all-feature formulas).
    code_group
        reference only: the group whose 1×1 trace term survives; None = the group with the highest
        training positive rate (the study's choice).
    random_state
        int, ``numpy.random.Generator`` (its stream continues) or None.

    Groups: ``sensitive_features`` coded 0..k−1 in sorted order. Only the binary (logistic) head.
    Fitted attributes: ``model_``, ``coef_``, ``intercept_``, ``config_`` (the engine's
    :class:`~repro.learners.dp_fermi.DPFermiConfig`), ``configured_`` (the unit's
    :class:`~repro.learners.unit.Configured`), ``W_``, ``steps_``, ``privacy_guarantee_``.
    """

    #: the learner unit whose ``fit`` this estimator's ``fit`` is
    _unit = unit
    #: the default variant's (``reference``) claim, declared on the class as a ``--with`` method declares its own
    #: (the fitted ``privacy_guarantee_`` is the fitted variant's)
    privacy_guarantee = fitted_guarantee(unit.DECLARED["reference"])

    def __init__(self, *, variant: str = "reference", epsilon: float = 1.0, delta: float | None = None,
                 lam: float = 1.0, fairness: str = "dp", epochs: int = 200, batch_size: int = 1024,
                 lr_theta: float = 0.005, lr_w: float = 0.01, clip_norm: float | None = None,
                 w_radius: float = 5.0, noise_scope: str = "sensitive", code_group: int | None = None,
                 random_state: int | np.random.Generator | None = None) -> None:
        self.variant = variant
        self.epsilon = epsilon
        self.delta = delta
        self.lam = lam
        self.fairness = fairness
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr_theta = lr_theta
        self.lr_w = lr_w
        self.clip_norm = clip_norm
        self.w_radius = w_radius
        self.noise_scope = noise_scope
        self.code_group = code_group
        self.random_state = random_state

    def _check_params(self) -> None:
        if self.variant not in VARIANTS:
            raise InvalidParameterError(f"variant must be one of {', '.join(VARIANTS)}; got {self.variant!r}.")
        unit.NoiseScope.of(self.noise_scope)
        if not float(self.epsilon) > 0:
            raise InvalidParameterError(f"epsilon must be > 0 (math.inf for none); got {self.epsilon}.")

    path_param = "lam"

    def fit(self, X, y, *, sensitive_features=None) -> DPFermiClassifier:
        """Train on the non-sensitive features X, labels y and groups ``sensitive_features``: the learner unit's
        :func:`repro.learners.dp_fermi_unit.fit` (the studies' calibration and engine)."""
        return self._fit_one_of_path(X, y, sensitive_features)

    def _fit_path(self, X, y, sensitive_features, lams: list) -> list[dict]:
        """One model per λ, trained together in one trial of the unit's ``fit_many`` (the same batches and noise
        draws; each λ calibrated by the unit's ``configure``, as its ``fit`` does)."""
        self._check_params()
        X, y, s = self._fit_inputs(X, y, sensitive_features)
        hyper = dict(lr_theta=float(self.lr_theta), lr_w=float(self.lr_w), batch_size=int(self.batch_size),
                     epochs=int(self.epochs), fairness=self.fairness)
        if self.variant == "reference":
            group = unit.privileged_group(y, s) if self.code_group is None else int(self.code_group)
            if not 0 <= group < self.groups_.size:
                raise InvalidParameterError(f"code_group must index a group 0..{self.groups_.size - 1}; got {group}.")
            hyper.update(clip_norm=5.0 if self.clip_norm is None else float(self.clip_norm),
                         w_radius=float(self.w_radius), code_group=group)
        elif self.clip_norm is not None:
            hyper["clip_norm"] = float(self.clip_norm)
        rho = group_floor(s)
        configured = [unit.configure(self.variant, n=X.shape[0], epsilon=float(self.epsilon), delta=self.delta,
                                     rho=rho, noise_scope=self.noise_scope, warn=False, lam=float(lam), **hyper)
                      for lam in lams]
        results = unit.fit_many(X, y, s, [[c.config for c in configured]], [as_generator(self.random_state)])[0]
        return [{**self._model_state(res.model), "config_": c.config, "configured_": c, "W_": res.W,
                 "steps_": res.steps, "privacy_guarantee_": _fitted(c)}
                for res, c in zip(results, configured, strict=True)]


def _fitted(c) -> Guarantee:
    """The unit's guarantee as the estimator earns it (:func:`fitted_guarantee`): the strict variants at the ε the
    accountant gives for the noise used; the reference with the RDP ε of the paper's model of its noise (the joint
    (θ, W) release) and whether Theorem 3.3's conditions hold in its caveat."""
    if math.isinf(c.guarantee.epsilon) or (c.config.per_sample_privacy and c.noise_multiplier == 0.0):
        return NON_PRIVATE
    if c.config.per_sample_privacy:
        return fitted_guarantee(c.guarantee.with_epsilon(c.epsilon(), c.delta))
    declared = fitted_guarantee(c.guarantee)
    caveat = declared.caveat
    if c.event is not None:
        caveat += (f"; the RDP accountant gives the joint mechanism (theta, W) eps = {c.epsilon(accountant='rdp'):.3g} "
                   "under the formula's own assumptions")
    if not c.conditions_ok:
        caveat += "; Theorem 3.3's conditions fail at these (n, T, m, eps)"
    return dataclasses.replace(declared, caveat=caveat)
