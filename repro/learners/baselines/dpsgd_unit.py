"""The baselines' DP-SGD core as a learner unit: logistic regression by DP-SGD with a group-gap penalty
(:func:`repro.learners.baselines._dpsgd.train_batched_dp_sgd`), the one place that decides its schedule, its noise
multiplier, its event and its guarantee.

Spec: seed-004-dpfermi.md §8 (the baselines' DP-SGD: per-sample clipping to C, N(0, (zC)²) on the clipped sum,
Poisson sampling at q = B/n, the sum divided by the expected batch size). Tran et al. (2021a) is this core with one
penalty weight γ per model (:mod:`repro.learners.baselines.tran_2021a`).

- :func:`event`: T Poisson-subsampled Gaussians at (z, q = B/n) (``dp_accounting``), None without noise;
- :func:`configure`: the smallest z whose event meets (ε, δ) by the PLD accountant
  (:func:`repro.learners.dp_sgd.calibrate_noise`); the guarantee is plain DP-SGD's without a penalty, and
  *nominal* with one (:func:`guarantee`: the penalty couples a batch's records, which per-sample clipping bounds
  only approximately);
- :func:`fit`: one trial at a budget, one model per γ of ``gammas`` on the same batches; :func:`fit_many`: many
  trials, each from its own generator (one program per trial: trials are not batched across).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from repro.errors import InvalidParameterError
from repro.learners import dp_sgd
from repro.learners.baselines._dpsgd import cell_layout, train_batched_dp_sgd
from repro.learners.logistic import LogisticModel
from repro.learners.unit import Configured, Unit, tiny_tabular
from repro.privacy.accounting import dp_sgd_event
from repro.privacy.guarantee import NON_PRIVATE, STANDARDISED_FEATURES, Guarantee, Label, Neighbouring

__all__ = ["PenalizedSGDConfig", "schedule", "event", "guarantee", "configure", "fit", "fit_many"]

_ACCOUNTANT = "PLD (dp_accounting), Poisson-subsampled Gaussian"


@dataclass(frozen=True)
class PenalizedSGDConfig:
    """One run of the core: z, C, learning rate, batch size B (q = B/n), epochs, the penalty's notion
    (``dp``: groups; ``eo``: (group, label) cells) and whether a penalty is on (it decides the guarantee)."""

    noise_multiplier: float = 0.0
    clip_norm: float = 1.0
    lr: float = 0.1
    batch_size: int = 1024
    epochs: int = 200
    fairness: str = "dp"
    penalized: bool = True

    def __post_init__(self) -> None:
        if self.noise_multiplier < 0 or not self.clip_norm > 0 or not self.lr > 0:
            raise InvalidParameterError(f"need noise_multiplier >= 0, clip_norm > 0, lr > 0; got "
                                        f"{self.noise_multiplier}, {self.clip_norm}, {self.lr}.")
        if self.fairness not in ("dp", "eo"):
            raise InvalidParameterError(f"fairness must be 'dp' or 'eo'; got {self.fairness!r}.")


def schedule(config: PenalizedSGDConfig, n: int) -> tuple[float, int]:
    """(q, T) of a run on ``n`` rows: :func:`repro.learners.dp_sgd.schedule` with rule ``B/n`` (q = B/n)."""
    return dp_sgd.schedule(n, config.batch_size, config.epochs, rule="B/n")


def event(config: PenalizedSGDConfig, n: int):
    """The ``dp_accounting`` event of a run on ``n`` rows (None without noise)."""
    if config.noise_multiplier == 0:
        return None
    q, steps = schedule(config, n)
    return dp_sgd_event(config.noise_multiplier, q, steps)


def _event_at(config: PenalizedSGDConfig, noise_multiplier: float, q: float, steps: int):
    """The event of T steps at a given z and inclusion rate q (an audit's observed run); None without noise."""
    return None if noise_multiplier == 0 else dp_sgd_event(noise_multiplier, q, steps)


def guarantee(epsilon: float, delta: float, *, penalized: bool = True) -> Guarantee:
    """Plain DP-SGD's guarantee (:func:`repro.learners.dp_sgd.guarantee`) without a penalty; *nominal* with one:
    the DP-SGD accountant's (ε, δ) w.r.t. all features, but the penalty couples the records of a batch through
    the group means, which per-sample clipping bounds only approximately."""
    if not penalized:
        return dp_sgd.guarantee(epsilon, delta)
    return Guarantee(epsilon, delta, Label.NOMINAL, Neighbouring.ADD_OR_REMOVE_ONE, accountant=_ACCOUNTANT,
                     caveat="the penalty couples a batch's records through the group means (per-sample clipping "
                            f"bounds it only approximately); {STANDARDISED_FEATURES}")


def _sigma(config: PenalizedSGDConfig) -> dict[str, float]:
    return {"sigma": dp_sgd.noise_std(config.noise_multiplier, config.clip_norm)}


def configure(*, n: int, epsilon: float, delta: float, noise_multiplier: float | None = None, **hyper) -> Configured:
    """Calibrate the core on ``n`` rows to (ε, δ) (ε = ∞: no noise); the guarantee carries the PLD ε of the
    noise used. ``noise_multiplier``: z calibrated by a method for a larger mechanism the core is part of (PF-LD's
    primal steps with its dual releases), taken as it is. ``hyper``: the other :class:`PenalizedSGDConfig`
    fields. Spec: seed-004 §8."""
    if not float(epsilon) > 0:
        raise InvalidParameterError(f"epsilon must be > 0 (math.inf for none); got {epsilon}.")
    config = PenalizedSGDConfig(**hyper)
    q, steps = schedule(config, n)
    z = dp_sgd.calibrate_noise(epsilon, delta, q, steps) if noise_multiplier is None else float(noise_multiplier)
    config = PenalizedSGDConfig(**{**hyper, "noise_multiplier": z})
    ev = event(config, n)
    c = Configured(config, NON_PRIVATE, n, float(delta), steps, q, config.noise_multiplier, ev, sigma=_sigma(config),
                   accountant=_ACCOUNTANT, event_of=event, sigma_of=_sigma, schedule_of=schedule, event_at=_event_at)
    if ev is None:
        return c
    return dataclasses.replace(c, guarantee=guarantee(c.epsilon(), delta, penalized=config.penalized))


def _train(X: np.ndarray, y: np.ndarray, s: np.ndarray, config: PenalizedSGDConfig, gammas: Sequence[float],
           rng: np.random.Generator) -> tuple[LogisticModel, ...]:
    """One model per γ (penalty weight γ on every cell), all on the same Poisson batches."""
    steps = schedule(config, X.shape[0])[1]
    layout = cell_layout(s, y, config.fairness)
    g = np.asarray(gammas, dtype=float)
    weights = np.repeat(g[:, None], layout.n_cells, axis=1)
    models = train_batched_dp_sgd(X, y, layout, weights=weights, noise_multiplier=config.noise_multiplier,
                                  clip_norm=config.clip_norm, lr=config.lr, batch_size=config.batch_size,
                                  steps=steps, rng=rng)
    return tuple(LogisticModel(models.w[:, j].copy(), float(models.b[j])) for j in range(g.size))


def fit_many(X: np.ndarray, y: np.ndarray, s: np.ndarray, configs: Sequence[PenalizedSGDConfig],
             generators: Sequence[np.random.Generator], *, gammas: Sequence[Sequence[float]] | None = None
             ) -> list[tuple[LogisticModel, ...]]:
    """Trial i: ``configs[i]`` with ``generators[i]``, one model per γ of ``gammas[i]`` (default (0,)). Each trial
    runs as it does alone (one program per trial)."""
    configs, generators = list(configs), list(generators)
    gammas = [(0.0,)] * len(configs) if gammas is None else list(gammas)
    if not len(configs) == len(generators) == len(gammas):
        raise InvalidParameterError(f"fit_many needs one generator and one γ grid per trial; got {len(configs)} "
                                    f"trials, {len(generators)} generators, {len(gammas)} grids.")
    return [_train(X, y, s, c, g, rng) for c, g, rng in zip(configs, gammas, generators, strict=True)]


def fit(X: np.ndarray, y: np.ndarray, s: np.ndarray, *, epsilon: float, delta: float, rng: np.random.Generator,
        gammas: Sequence[float] = (0.0,), **hyper) -> tuple[tuple[LogisticModel, ...], Configured]:
    """Train the core at the budget (ε, δ), one model per γ of ``gammas`` (:func:`configure` on these rows, then
    :func:`fit_many` of that one trial)."""
    c = configure(n=int(np.shape(X)[0]), epsilon=epsilon, delta=delta, **hyper)
    return fit_many(X, y, s, [c.config], [rng], gammas=[gammas])[0], c


def _example(rng: np.random.Generator) -> tuple:
    X, y, s = tiny_tabular(rng)
    return X, y, s, dict(epsilon=1.0, delta=1e-3, gammas=(1.0,), batch_size=32, epochs=2)


#: the unit's contract (:class:`repro.learners.unit.Unit`); the example's γ grid is (1,)
UNIT = Unit(name="the baselines' DP-SGD core", event=event, configure=configure, fit=fit, fit_many=fit_many,
            fit_one=lambda X, y, s, c, rng: fit_many(X, y, s, [c.config], [rng], gammas=[(1.0,)])[0],
            example=_example)
