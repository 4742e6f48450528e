"""DP-FERMI's CNN learner unit (UTKFace, Figure 5): the one place that turns a variant and a budget into the
CNN's configuration, its noise, its event and its guarantee, and its budget-taking fit.

Spec: seed-004-dpfermi.md §4.3 (the code's multi-class ERMI), §4.4 (strict-DP mode), §5 (UTKFace noise),
§7.5–§7.6 (model, compute). The calibration is the tabular unit's (:func:`repro.learners.dp_fermi_unit.configure`)
on the CNN's engine configuration (:data:`VARIANTS`): ``reference`` = the authors' code path (softmax head, full
ERMI, batch clip L, W₀ ~ N(0, 1), shuffled epochs, Theorem 3.3(a) σ's: nominal), ``strict`` = noise only on the
s-dependent parts with one z from the exact strict accountant (public-statistics caveat). The trainer is
:func:`repro.learners.dp_fermi_cnn.train_dp_fermi_jax_many` (JAX), imported when a fit runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from repro.errors import InvalidParameterError
from repro.learners import dp_fermi_unit
from repro.learners.dp_fermi import DPFermiConfig
from repro.learners.unit import Configured, Unit
from repro.privacy.dpfermi_noise import group_floor

__all__ = ["VARIANTS", "configure", "event", "fit", "fit_many"]

#: the CNN's engine configuration of each variant (spec §4.3 [C0], §4.4); λ, learning rates, B, epochs, L and D
#: come per run
VARIANTS: dict[str, DPFermiConfig] = {
    "reference": DPFermiConfig(head="softmax", ermi_form="full", fairness="dp", theta_clip="batch",
                               w_projection="frobenius", w_init="normal", theta_noise_scale="one",
                               w_noise_scale="lambda", sampling="shuffle"),
    "strict": dp_fermi_unit.VARIANTS["strict"].with_(head="softmax"),
}

#: the accounted event of a configuration: the tabular unit's (the same mechanism, per-sample parts by vmap)
event = dp_fermi_unit.event


def configure(variant: str, *, n: int, epsilon: float, delta: float | None = None, rho: float | None = None,
              warn: bool = True, **hyper: Any) -> Configured:
    """Calibrate the CNN ``variant`` to (ε, δ) on ``n`` images (δ = 1/n² when None): Theorem 3.3(a)'s σ's
    (``reference``, L = ``clip_norm``, D = ``w_radius``) or the exact strict accountant's z (``strict``)."""
    if variant not in VARIANTS:
        raise InvalidParameterError(f"the CNN variant must be one of {', '.join(VARIANTS)}; got {variant!r}.")
    return dp_fermi_unit.configure(VARIANTS[variant], n=n, epsilon=epsilon, delta=delta, rho=rho,
                                   noise_scope="sensitive", warn=warn, **hyper)


def fit_many(X: np.ndarray, y: np.ndarray, s: np.ndarray, configs: Sequence[Sequence[DPFermiConfig]],
             generators: Sequence[np.random.Generator], **train: Any) -> list[list]:
    """Train each trial's models (``configs[i]``, one λ grid sharing initialisation, batches and noise draws)
    with ``generators[i]``: one :func:`~repro.learners.dp_fermi_cnn.train_dp_fermi_jax_many` call per trial
    (trials are not batched across: one program per trial). ``train``: that trainer's other arguments
    (``model``, ``device``, ``n_classes``, ``noise_source``, ``norm_stats``, ``w_rows``, ``progress``)."""
    from repro.learners.dp_fermi_cnn import train_dp_fermi_jax_many

    if len(configs) != len(generators):
        raise InvalidParameterError(f"fit_many needs one generator per trial; got {len(configs)} trials and "
                                    f"{len(generators)} generators.")
    return [train_dp_fermi_jax_many(X, y, s, list(cfgs), rng=rng, **train)
            for cfgs, rng in zip(configs, generators, strict=True)]


def fit(X: np.ndarray, y: np.ndarray, s: np.ndarray, *, epsilon: float, delta: float | None = None,
        rng: np.random.Generator, variant: str = "reference", lams: Sequence[float] = (1.0,),
        rho: float | None = None, train: dict[str, Any] | None = None, **hyper: Any) -> tuple[list, Configured]:
    """Train the CNN at the budget (ε, δ), one model per λ of ``lams`` (ρ from ``s`` when None): :func:`configure`
    on these images, then :func:`fit_many` of that one trial. ``train``: the trainer's options (:func:`fit_many`)."""
    rho = group_floor(np.asarray(s)) if rho is None else rho
    c = configure(variant, n=int(np.shape(X)[0]), epsilon=epsilon, delta=delta, rho=rho, **hyper)
    return fit_many(X, y, s, [[c.config.with_(lam=float(lam)) for lam in lams]], [rng], **(train or {}))[0], c


def _example(rng: np.random.Generator) -> tuple:
    """A few 16-px images (the smoke profile's size), 9 age classes, 5 races; one epoch, on the CPU."""
    n = 24
    X = rng.integers(0, 256, size=(n, 16, 16, 3), dtype=np.uint8)
    y, s = np.arange(n) % 9, np.arange(n) % 5
    return X, y, s, dict(variant="strict", epsilon=50.0, delta=1e-3, batch_size=8, epochs=1,
                         train=dict(model="vgg", device="cpu", n_classes=9, w_rows="groups", norm_stats="instance"))


def _fit_one(X, y, s, c: Configured, rng: np.random.Generator):
    return fit_many(X, y, s, [[c.config]], [rng], model="vgg", device="cpu", n_classes=9, w_rows="groups",
                    norm_stats="instance")[0][0]


#: the unit's contract (:class:`repro.learners.unit.Unit`)
UNIT = Unit(name="DP-FERMI (CNN)", event=event, configure=configure, fit=lambda *a, **k: _first(fit(*a, **k)),
            fit_many=fit_many, fit_one=_fit_one, example=_example)


def _first(fitted: tuple[list, Configured]) -> tuple:
    """``fit``'s one-λ result as one model (the contract's ``fit`` returns a model, not a grid)."""
    models, c = fitted
    return models[0], c
