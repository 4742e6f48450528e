"""DP-FERMI's learner unit (tabular): the one place that turns a variant and a budget into a configuration, its
schedule (q, T), its noise, its event and its guarantee, and the fits that studies, estimators, audits and
``--with`` wrappers call (the contract: :mod:`repro.learners.unit`).

Spec: seed-004-dpfermi.md §4.3–§4.4 (variants), §5 (Theorem 3.3 noise; caveats); seed-003-thesis.md §3.3
(the thesis code's all-feature formulas).

- :func:`schedule` gives (q, T) of a configuration on n rows: Poisson sampling with Opacus's q = 1/⌈n/B⌉
  and T = epochs·⌈n/B⌉ (``sampling="poisson"``), or T = epochs·⌈n/B⌉ shuffled or uniform steps (q = None).
  It is :func:`repro.learners.dp_fermi.schedule` (the engines read it too), re-exported here.
- :func:`event` is the accounted event of a configuration (``strict-all``: the Poisson-subsampled Gaussian;
  ``strict``: the exact strict accountant's event; the reference path has none).
- :func:`configure` returns a :class:`~repro.learners.unit.Configured`: for ``strict`` and ``strict-all`` the
  smallest noise multiplier z whose event meets (ε, δ) (:func:`repro.learners.dp_fermi.calibrate_privacy`); for
  ``reference`` Theorem 3.3's σ_θ, σ_W (:class:`NoiseScope`: part (a) for the sensitive attribute, or the
  thesis's all-feature formulas), with the paper's model of that noise as an indicative event. The guarantee
  is the engine's declaration (:func:`repro.learners.dp_fermi.guarantee`). :func:`amplified_accounting` is the
  audit's named deviation (the old amplified z of ``strict``).
- :func:`fit` trains one model at a budget; :func:`fit_many` trains many trials at once in one compiled program
  per shape (:mod:`repro.learners.dp_fermi_compiled`); the numpy engine of :mod:`repro.learners.dp_fermi` is
  the reference it is tested against.
"""

from __future__ import annotations

import enum
import math

import numpy as np

from repro.errors import InvalidParameterError
from repro.learners import dp_sgd
from repro.learners.dp_fermi import (
    REFERENCE,
    STRICT_ALL_FEATURES,
    STRICT_SENSITIVE,
    DPFermiConfig,
    DPFermiResult,
    accountant_name,
    calibrate_privacy,
    privacy_event,
    reference_noise,
    schedule,
)
from repro.learners.dp_fermi import guarantee as engine_guarantee
from repro.learners.dp_fermi_compiled import fit_many, train_batch
from repro.learners.unit import Configured, Unit, tiny_tabular
from repro.privacy.dpfermi_noise import group_floor
from repro.privacy.guarantee import Guarantee, Label, Neighbouring

__all__ = ["VARIANTS", "privileged_group", "ALL_FEATURE_REFERENCE", "NoiseScope", "DECLARED", "Configured", "schedule", "guarantee",
           "event", "configure", "fit", "fit_many", "train_batch", "amplified_accounting", "UNIT"]

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


class NoiseScope(enum.StrEnum):
    """What the reference path's noise is calibrated to protect, owning its noise rule and its claim: Theorem
    3.3(a)'s σ's for the sensitive attribute (``sensitive``; the paper's model of them is carried as an event), or
    the thesis code's all-feature formulas (``all``; nominal w.r.t. replacing a whole record, no event). A ``str``
    enum: it equals its text. Spec: seed-004 §5; seed-003 §3.3."""

    SENSITIVE = "sensitive"
    ALL = "all"

    @classmethod
    def of(cls, value: object) -> NoiseScope:
        """``value`` as a scope; anything else is a one-line error naming the choices."""
        try:
            return cls(value)
        except ValueError:
            raise InvalidParameterError(f"noise_scope must be 'sensitive' or 'all'; got {value!r}.") from None

    def guarantee(self, config: DPFermiConfig, epsilon: float, delta: float) -> Guarantee:
        """What the reference path promises under this scope (the engine's declaration for ``sensitive``)."""
        if self is NoiseScope.ALL and not config.per_sample_privacy:
            return ALL_FEATURE_REFERENCE.with_epsilon(epsilon, delta)
        return engine_guarantee(config, epsilon, delta)


def privileged_group(y: np.ndarray, s: np.ndarray) -> int:
    """The group with the highest positive-label rate: the one whose 1×1 trace term the authors' reference code
    keeps (``code_group`` of the ``reference`` configuration; spec seed-004 §4.3)."""
    return int(np.argmax([y[s == g].mean() for g in range(int(s.max()) + 1)]))


def guarantee(config: DPFermiConfig, epsilon: float, delta: float,
              noise_scope: NoiseScope | str = NoiseScope.SENSITIVE) -> Guarantee:
    """What a run of ``config`` at (ε, δ) promises: the engine's declaration for its privacy mode
    (:func:`repro.learners.dp_fermi.guarantee`), or :data:`ALL_FEATURE_REFERENCE` for the reference path
    with the thesis's all-feature noise (:meth:`NoiseScope.guarantee`)."""
    return NoiseScope.of(noise_scope).guarantee(config, epsilon, delta)


#: what each named variant declares (its engine's privacy mode; ε and δ are filled per run)
DECLARED: dict[str, Guarantee] = {variant: guarantee(engine, math.inf, 0.0) for variant, engine in VARIANTS.items()}


def event(config: DPFermiConfig, n: int):
    """The accounted event of ``config`` (its noise multiplier set) on ``n`` rows: the add/remove
    Poisson-subsampled Gaussian (``strict-all``), the exact strict accountant's
    :class:`~repro.privacy.strict_accountant.StrictEvent` (``strict``), None for the reference path (no
    accountant: Theorem 3.3's formula) or no noise (:func:`repro.learners.dp_fermi.privacy_event`)."""
    q, steps = schedule(config, n)
    return privacy_event(config, config.noise_multiplier, q, steps)


def configure(variant: str | DPFermiConfig, *, n: int, epsilon: float, delta: float | None = None,
              rho: float | None = None, noise_scope: NoiseScope | str = NoiseScope.SENSITIVE,
              warn: bool = True, **hyper) -> Configured:
    """Calibrate a DP-FERMI variant to (ε, δ) on ``n`` training rows (a :class:`repro.learners.unit.Configured`).

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

    The accountant-calibrated modes take the smallest z whose :func:`event` meets (ε, δ)
    (:func:`repro.learners.dp_fermi.calibrate_privacy`); the reference path takes Theorem 3.3's σ's and
    carries the paper's model of them (``event``: the joint release, ``parts["block"]``: one block; RDP).
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
        return Configured(config, engine_guarantee(config, epsilon, delta), n, delta, steps, q, z,
                          privacy_event(config, z, q, steps), accountant=accountant_name(config), event_of=event,
                          schedule_of=schedule, event_at=privacy_event)
    if rho is None:
        raise InvalidParameterError("the reference noise (Theorem 3.3) needs the group floor rho.")
    scope = noise_scope if isinstance(noise_scope, NoiseScope) else NoiseScope.of(noise_scope)
    noise, z, events = reference_noise(config, n, epsilon, delta, rho, scope=scope.value, warn=warn)
    config = config.with_(sigma_theta=noise.sigma_theta, sigma_w=noise.sigma_w)
    return Configured(config, scope.guarantee(config, epsilon, delta), n, delta, steps, q, z,
                      events.get("joint"), sigma={"sigma_theta": noise.sigma_theta, "sigma_w": noise.sigma_w},
                      parts={k: v for k, v in events.items() if k != "joint"}, conditions=noise.conditions,
                      accountant="RDP of the paper's model (indicative)" if events else "none")


def amplified_accounting(c: Configured) -> Configured:
    """The ``strict`` run at the noise multiplier of the old amplified accounting (PLD of the add/remove
    Poisson-subsampled Gaussian at q), which the unclipped non-sensitive part breaks (issue 14, defect 1): the
    privacy audit's broken control. The claim stays ``c``'s."""
    z = dp_sgd.calibrate_noise(c.guarantee.epsilon, c.delta, c.sampling_probability, c.steps)
    return c.with_noise_multiplier(z, "old amplified accounting (issue 14, defect 1)")


def fit(X: np.ndarray, y: np.ndarray, s: np.ndarray, *, epsilon: float, delta: float | None = None,
        rng: np.random.Generator, variant: str | DPFermiConfig = "reference", rho: float | None = None,
        noise_scope: NoiseScope | str = NoiseScope.SENSITIVE, warn: bool = True, **hyper
        ) -> tuple[DPFermiResult, Configured]:
    """Train one DP-FERMI model at the budget (ε, δ) (δ = 1/n² when None; ρ from ``s`` when None): the
    :func:`configure` of ``variant`` on these rows, then :func:`fit_many` of that one trial."""
    rho = group_floor(np.asarray(s)) if rho is None else rho
    c = configure(variant, n=int(np.shape(X)[0]), epsilon=epsilon, delta=delta, rho=rho, noise_scope=noise_scope,
                  warn=warn, **hyper)
    return fit_many(X, y, s, [[c.config]], [rng])[0][0], c


def _example(rng: np.random.Generator) -> tuple:
    X, y, s = tiny_tabular(rng)
    return X, y, s, dict(variant="strict-all", epsilon=2.0, delta=1e-3, lam=0.5, batch_size=32, epochs=2)


#: the unit's contract (:class:`repro.learners.unit.Unit`)
UNIT = Unit(name="DP-FERMI (tabular)", event=event, configure=configure, fit=fit, fit_many=fit_many,
            fit_one=lambda X, y, s, c, rng: fit_many(X, y, s, [[c.config]], [rng])[0][0], example=_example)
