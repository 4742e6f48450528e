"""DP-FERMI's learner unit: the one place that turns a variant and a budget into a configuration, its
schedule (q, T), its noise and its guarantee, and the one batched fit that studies, estimators and
``--with`` wrappers call.

Spec: seed-004-dpfermi.md §4.3–§4.4 (variants), §5 (Theorem 3.3 noise; caveats); seed-003-thesis.md §3.3
(the thesis code's all-feature formulas).

- :func:`schedule` gives (q, T) of a configuration on n rows: Poisson sampling with Opacus's q = 1/⌈n/B⌉
  and T = epochs·⌈n/B⌉ (``sampling="poisson"``), or T = epochs·⌈n/B⌉ shuffled or uniform steps (q = None).
  It is :func:`repro.learners.dp_fermi.schedule` (the engines read it too), re-exported here.
- :func:`configure` calibrates the noise of a variant (``reference``: Theorem 3.3's σ_θ, σ_W, part (a)
  for the sensitive attribute or the thesis's part-(b) formulas for all features; ``strict`` and
  ``strict-all``: the noise multiplier z from the variant's own accountant) and states the guarantee
  the engine declares for it (:func:`repro.learners.dp_fermi.guarantee`). The calibration formulas it
  applies live in :mod:`repro.learners.dp_fermi` (:func:`~repro.learners.dp_fermi.calibrate_privacy`,
  :func:`~repro.learners.dp_fermi.reference_noise`).
- :func:`fit_many` trains many trials at once in one compiled program per shape
  (:mod:`repro.learners.dp_fermi_compiled`); the numpy engine of :mod:`repro.learners.dp_fermi` is the
  reference it is tested against.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from repro.errors import InvalidParameterError
from repro.learners.dp_fermi import (
    REFERENCE,
    STRICT_ALL_FEATURES,
    STRICT_SENSITIVE,
    DPFermiConfig,
    calibrate_privacy,
    privacy_event,
    reference_noise,
    schedule,
)
from repro.learners.dp_fermi import guarantee as engine_guarantee
from repro.learners.dp_fermi_compiled import fit_many, train_batch
from repro.privacy.accounting import epsilon as accounted_epsilon
from repro.privacy.guarantee import Guarantee, Label, Neighbouring

__all__ = ["VARIANTS", "ALL_FEATURE_REFERENCE", "Configured", "schedule", "guarantee", "configure", "fit_many",
           "train_batch"]

#: the reference code path with the thesis's all-feature noise: nominal, w.r.t. the relation that noise is
#: calibrated for (one whole record replaced, seed-003 §3.3), not Theorem 3.3(a)'s; ε is filled per use
ALL_FEATURE_REFERENCE = Guarantee(
    math.inf, 0.0, Label.NOMINAL, Neighbouring.REPLACE_ONE, protects="every feature",
    accountant="the thesis's all-feature formula (seed-003 §3.3)",
    caveat="the thesis's all-feature noise per block (θ and W), never composed; the Lipschitz "
           "bound is not enforced per sample (batch-gradient clip)")

#: the engine configuration of each named variant (spec §4.3 [C0]; §4.4 strict modes)
VARIANTS: dict[str, DPFermiConfig] = {"reference": REFERENCE, "strict": STRICT_SENSITIVE,
                                      "strict-all": STRICT_ALL_FEATURES}


def guarantee(config: DPFermiConfig, epsilon: float, delta: float,
              noise_scope: Literal["sensitive", "all"] = "sensitive") -> Guarantee:
    """What a run of ``config`` at (ε, δ) promises: the engine's declaration for its privacy mode
    (:func:`repro.learners.dp_fermi.guarantee`), or :data:`ALL_FEATURE_REFERENCE` for the reference path
    with the thesis's all-feature noise."""
    if noise_scope == "all" and not config.per_sample_privacy:
        return ALL_FEATURE_REFERENCE.with_epsilon(epsilon, delta)
    return engine_guarantee(config, epsilon, delta)


@dataclass(frozen=True)
class Configured:
    """What :func:`configure` decided: the configuration (noise set), its guarantee, and the facts the
    results record (schedule, δ, the Theorem 3.3 conditions, the accountant's ε of the noise used)."""

    config: DPFermiConfig
    guarantee: Guarantee
    steps: int
    sampling_probability: float | None
    delta: float
    conditions_ok: bool | None
    accounted_epsilon: float | None


def configure(variant: str | DPFermiConfig, *, n: int, epsilon: float, delta: float | None = None,
              rho: float | None = None, noise_scope: Literal["sensitive", "all"] = "sensitive",
              warn: bool = True, **hyper) -> Configured:
    """Calibrate a DP-FERMI variant to (ε, δ) on ``n`` training rows.

    Parameters
    ----------
    variant
        ``reference``, ``strict``, ``strict-all`` (:data:`VARIANTS`) or a :class:`DPFermiConfig`.
    n, epsilon, delta
        Training rows and budget; δ = 1/n² when None; ε = ∞ gives no noise.
    rho
        Group floor ρ (:func:`repro.privacy.dpfermi_noise.group_floor`); the reference noise needs it.
    noise_scope
        Reference noise: Theorem 3.3(a) (``sensitive``) or the thesis code's all-feature formulas (``all``).
    warn
        Log Theorem 3.3's violated conditions (reference noise).
    **hyper
        Fields of :class:`DPFermiConfig` (λ, learning rates, batch size, epochs, clip, radius, …).

    Spec: seed-004 §4.4, §5; seed-003 §3.3.
    """
    if isinstance(variant, str):
        if variant not in VARIANTS:
            raise InvalidParameterError(f"variant must be one of {', '.join(VARIANTS)}; got {variant!r}.")
        base = VARIANTS[variant]
    else:
        base = variant
    config = base.with_(**hyper)
    epsilon = float(epsilon)
    if not epsilon > 0:
        raise InvalidParameterError(f"epsilon must be > 0 (math.inf for none); got {epsilon}.")
    delta = 1.0 / n**2 if delta is None else float(delta)
    q, steps = schedule(config, n)
    if config.per_sample_privacy:
        z = 0.0 if math.isinf(epsilon) else calibrate_privacy(config, epsilon, delta, q, steps)
        config = config.with_(noise_multiplier=z)
        eps_used = math.inf if z == 0 else accounted_epsilon(privacy_event(config, z, q, steps), delta)
        return Configured(config, engine_guarantee(config, epsilon, delta), steps, q, delta, None, eps_used)
    if rho is None:
        raise InvalidParameterError("the reference noise (Theorem 3.3) needs the group floor rho.")
    noise = reference_noise(config, n, epsilon, delta, rho, scope=noise_scope, warn=warn)
    config = config.with_(sigma_theta=noise.sigma_theta, sigma_w=noise.sigma_w)
    return Configured(config, guarantee(config, epsilon, delta, noise_scope), steps, q, delta,
                      noise.conditions.ok, None)
