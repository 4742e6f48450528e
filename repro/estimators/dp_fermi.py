"""DP-FERMI (Lowy et al., ICLR 2023) in its three variants as a scikit-learn estimator.

Wraps the one engine :func:`repro.learners.dp_fermi.train_dp_fermi` with the configurations and
noise calibration of ``studies/dpfermi/tradeoff_figures`` (spec seed-004-dpfermi.md §4.3–§4.4, §5):

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
from repro.learners.dp_fermi import DPFermiConfig
from repro.learners.dp_fermi_unit import VARIANTS as _ENGINES
from repro.learners.dp_fermi_unit import configure, train_batch
from repro.privacy.dpfermi_noise import accountant_epsilons, group_floor
from repro.privacy.guarantee import NON_PRIVATE, Guarantee

__all__ = ["DPFermiClassifier", "VARIANTS"]

VARIANTS = tuple(_ENGINES)


def privileged_group(y: np.ndarray, s: np.ndarray) -> int:
    """The group with the highest positive-label rate: the term the reference's 1×1 trace keeps
    (the study's choice, spec §4.3)."""
    return int(np.argmax([y[s == g].mean() for g in range(int(s.max()) + 1)]))


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
    :class:`DPFermiConfig`), ``W_``, ``steps_``, ``privacy_guarantee_``.
    """

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
        if self.noise_scope not in ("sensitive", "all"):
            raise InvalidParameterError(f"noise_scope must be 'sensitive' or 'all'; got {self.noise_scope!r}.")
        if not float(self.epsilon) > 0:
            raise InvalidParameterError(f"epsilon must be > 0 (math.inf for none); got {self.epsilon}.")

    def fit(self, X, y, *, sensitive_features=None) -> DPFermiClassifier:
        """Train on the non-sensitive features X, labels y and groups ``sensitive_features``."""
        self._check_params()
        X, y, s = self._fit_inputs(X, y, sensitive_features)
        n, B, epochs = X.shape[0], int(self.batch_size), int(self.epochs)
        eps = float(self.epsilon)
        delta = 1.0 / n**2 if self.delta is None else float(self.delta)
        base = dict(lam=float(self.lam), lr_theta=float(self.lr_theta), lr_w=float(self.lr_w), batch_size=B,
                    epochs=epochs, fairness=self.fairness)
        if self.variant == "reference":
            cfg, guarantee = self._reference(n, y, s, eps, delta, base)
        else:
            cfg, guarantee = self._strict(n, eps, delta, base)
        res = train_batch(X, y, s, [cfg], rng=as_generator(self.random_state))[0]
        self._set_model(res.model)
        self.config_ = cfg
        self.W_ = res.W
        self.steps_ = res.steps
        self.privacy_guarantee_ = guarantee
        return self

    def _reference(self, n: int, y: np.ndarray, s: np.ndarray, eps: float, delta: float, base: dict
                   ) -> tuple[DPFermiConfig, Guarantee]:
        """Theorem 3.3's noise (or the thesis's all-feature formulas) from the learner unit; the guarantee is
        the unit's declaration, with the joint ε the accountant gives under the formula's own assumptions."""
        clip = 5.0 if self.clip_norm is None else float(self.clip_norm)
        group = privileged_group(y, s) if self.code_group is None else int(self.code_group)
        if not 0 <= group < self.groups_.size:
            raise InvalidParameterError(f"code_group must index a group 0..{self.groups_.size - 1}; got {group}.")
        c = configure("reference", n=n, epsilon=eps, delta=delta, rho=group_floor(s), noise_scope=self.noise_scope,
                      warn=False, clip_norm=clip, w_radius=float(self.w_radius), code_group=group, **base)
        if math.isinf(eps):
            return c.config, NON_PRIVATE
        declared = fitted_guarantee(c.guarantee)
        joint = accountant_epsilons(n, c.steps, int(self.batch_size), eps, delta)["joint"]
        caveat = (f"{declared.caveat}; the RDP accountant gives the joint mechanism (theta, W) eps = {joint:.3g} "
                  "under the formula's own assumptions")
        if not c.conditions_ok:
            caveat += "; Theorem 3.3's conditions fail at these (n, T, m, eps)"
        return c.config, dataclasses.replace(declared, caveat=caveat)

    def _strict(self, n: int, eps: float, delta: float, base: dict) -> tuple[DPFermiConfig, Guarantee]:
        """Noise calibrated by the engine's own accountant for its privacy mode (exact strict accountant for
        ``strict``, PLD of the Poisson-subsampled Gaussian for ``strict-all``); the guarantee is the unit's
        declaration at the ε the accountant gives for the noise used."""
        changes = dict(base)
        if self.clip_norm is not None:
            changes["clip_norm"] = float(self.clip_norm)
        c = configure(self.variant, n=n, epsilon=eps, delta=delta, **changes)
        if c.config.noise_multiplier == 0.0:
            return c.config, NON_PRIVATE
        return c.config, fitted_guarantee(c.guarantee.with_epsilon(c.accounted_epsilon, delta))
