"""What a learner unit decides for one run, and the one privacy row a trial writes from it.

Every private learner family has a unit (:mod:`repro.learners.dp_fermi_unit`, :mod:`repro.learners.dp_sgd_unit`,
:mod:`repro.learners.baselines._dpsgd_unit`, :mod:`repro.learners.dp_fermi_cnn_unit`) with the same contract:

- ``event(config, n)``: the ``dp_accounting`` event (or the exact strict accountant's
  :class:`~repro.privacy.strict_accountant.StrictEvent`) of a configuration with its noise set, on ``n`` rows;
- ``configure(..., n=, epsilon=, delta=, **hyper) -> Configured``: the calibration, generic over ``event``
  (the smallest noise whose event meets the budget), or the paper's formula for a nominal path;
- ``fit(X, y, s, *, epsilon, delta, rng, **hyper) -> (result, Configured)``: one budget-taking fit, equal to
  the unit's batched ``fit_many`` of that one trial.

:class:`Configured` carries the configuration (noise set), its event, (q, T), z and the noise stds, the
:class:`~repro.privacy.guarantee.Guarantee` it claims and :meth:`Configured.epsilon` (PLD or RDP at any δ). The
privacy audits' broken controls are named deviations of a ``Configured`` (:meth:`Configured.with_noise_multiplier`;
the claim stays the calibrated one). :func:`privacy_row` is the one function that turns a ``Configured`` into a
trial's privacy row. Each unit module declares its contract once as ``UNIT = Unit(...)``; the tests find every
``UNIT`` under :mod:`repro.learners` and check it (``tests/learners/test_units.py``), with no test edit per unit. Spec: seed-003 §3.2, §10 P4 and P6; seed-004 §4.4, §5.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from repro.errors import InvalidParameterError
from repro.privacy.accounting import Accountant
from repro.privacy.accounting import epsilon as accounted_epsilon
from repro.privacy.guarantee import Guarantee

__all__ = ["Configured", "Unit", "privacy_row", "tiny_tabular"]


@dataclass(frozen=True)
class Configured:
    """A unit's decision for one run on ``n`` rows (see the module docstring).

    ``event`` is the mechanism the guarantee accounts; for a nominal path (the DP-FERMI reference code) it is
    the paper's own model of the mechanism, whose ε is indicative only (the guarantee's label says so).
    ``conditions`` are the formula's conditions where it has any (Theorem 3.3's); ``parts`` are named sub-mechanisms (e.g. ``{"block": one Theorem 3.3 block alone}``); ``sigma`` the
    noise stds by name; ``deviation`` names a deliberate departure from the calibrated run (audit controls).
    """

    config: Any
    guarantee: Guarantee
    n: int
    delta: float
    steps: int
    sampling_probability: float | None
    noise_multiplier: float
    event: Any | None
    sigma: Mapping[str, float] = field(default_factory=dict)
    parts: Mapping[str, Any] = field(default_factory=dict)
    conditions: Any | None = None
    accountant: str = ""
    deviation: str = ""
    event_of: Callable[[Any, int], Any] | None = field(default=None, repr=False, compare=False)
    sigma_of: Callable[[Any], Mapping[str, float]] | None = field(default=None, repr=False, compare=False)
    schedule_of: Callable[[Any, int], tuple[float | None, int]] | None = field(default=None, repr=False,
                                                                                compare=False)
    event_at: Callable[[Any, float, float, int], Any] | None = field(default=None, repr=False, compare=False)

    @property
    def conditions_ok(self) -> bool | None:
        """Whether the formula's conditions hold (Theorem 3.3's, reference path); None where none apply."""
        return None if self.conditions is None else bool(self.conditions.ok)

    def epsilon(self, delta: float | None = None, accountant: Accountant = "pld", *, part: str | None = None) -> float:
        """ε at ``delta`` (default: the run's δ) of the event (or of the named ``part``) under ``accountant``;
        ∞ when there is no event (no noise, or a path with no accountant)."""
        event = self.event if part is None else self.parts.get(part)
        if event is None:
            return math.inf
        return accounted_epsilon(event, self.delta if delta is None else float(delta), accountant=accountant)

    def with_noise_multiplier(self, noise_multiplier: float, why: str = "") -> Configured:
        """The same run at another noise multiplier z (an audit's broken control): the configuration and its
        event change, the claimed guarantee does not. Only units calibrated by z have it."""
        if self.event_of is None or not hasattr(self.config, "noise_multiplier"):
            raise InvalidParameterError("this configuration is not calibrated by a noise multiplier; "
                                        "no with_noise_multiplier deviation applies.")
        z = float(noise_multiplier)
        config = dataclasses.replace(self.config, noise_multiplier=z)
        sigma = self.sigma_of(config) if self.sigma_of is not None else self.sigma
        return dataclasses.replace(self, config=config, noise_multiplier=z, event=self.event_of(config, self.n),
                                   sigma=sigma, deviation=why or f"noise multiplier {z:.6g} instead of "
                                                                 f"{self.noise_multiplier:.6g}")


    def with_config(self, config: Any, why: str) -> Configured:
        """The same claim with the run drawn from another configuration (an audit's broken control, e.g. the
        sampler at 2q): (q, T), z, the event and the noise stds follow ``config``; the guarantee does not."""
        if self.schedule_of is None or self.event_of is None:
            raise InvalidParameterError("this unit declares no schedule; no with_config deviation applies.")
        q, steps = self.schedule_of(config, self.n)
        sigma = self.sigma_of(config) if self.sigma_of is not None else self.sigma
        return dataclasses.replace(self, config=config, sampling_probability=q, steps=steps,
                                   noise_multiplier=float(config.noise_multiplier),
                                   event=self.event_of(config, self.n), sigma=sigma, deviation=why)

    def observed(self, noise_multiplier: float, sampling_probability: float, why: str = "") -> Configured:
        """The run's mechanism at a measured noise multiplier and inclusion rate over the same T steps (an
        audit's "observed" ε: the accountant applied to what the runs drew, not to what was intended)."""
        if self.event_at is None:
            raise InvalidParameterError("this unit declares no event at (z, q, T); no observed deviation applies.")
        z, q = float(noise_multiplier), float(sampling_probability)
        return dataclasses.replace(self, noise_multiplier=z, sampling_probability=q,
                                   event=self.event_at(self.config, z, q, self.steps),
                                   deviation=why or f"observed z = {z:.6g}, q = {q:.6g}")


#: the facts a privacy row can name, each read from a :class:`Configured`
_FACTS: dict[str, Callable[[Configured], Any]] = {
    "noise_multiplier": lambda c: c.noise_multiplier,
    "steps": lambda c: c.steps,
    "sampling_probability": lambda c: c.sampling_probability,
    "delta": lambda c: c.delta,
    "n_train": lambda c: c.n,
    "conditions_ok": lambda c: c.conditions_ok,
    "eps_condition_ok": lambda c: c.conditions.eps_ok,
    "steps_condition_ok": lambda c: c.conditions.steps_ok,
    "min_steps": lambda c: c.conditions.min_steps,
    "accountant": lambda c: c.accountant,
    "guarantee": lambda c: c.guarantee.describe(),
    "label": lambda c: c.guarantee.label.value,
    "epsilon_pld": lambda c: c.epsilon(c.delta, "pld"),
    "epsilon_rdp": lambda c: c.epsilon(c.delta, "rdp"),
}


def privacy_row(c: Configured, *names: str, **columns: str) -> dict[str, Any]:
    """The privacy row of a trial from its :class:`Configured`: each of ``names`` under its own name, then each
    ``column=fact`` of ``columns`` (facts: :data:`_FACTS`, the noise stds, ``<part>_epsilon_rdp``, the
    configuration's fields). Only the facts named are computed (an accountant's ε costs time)."""
    row = {}
    for column, name in [*((n, n) for n in names), *columns.items()]:
        if name in _FACTS:
            row[column] = _FACTS[name](c)
        elif name in c.sigma:
            row[column] = c.sigma[name]
        elif name.endswith("_epsilon_rdp") and name.removesuffix("_epsilon_rdp") in c.parts:
            row[column] = c.epsilon(c.delta, "rdp", part=name.removesuffix("_epsilon_rdp"))
        elif dataclasses.is_dataclass(c.config) and name in {f.name for f in dataclasses.fields(c.config)}:
            row[column] = getattr(c.config, name)
        else:
            raise InvalidParameterError(f"a privacy row cannot name {name!r}; facts: {', '.join(_FACTS)}, the noise "
                                        f"stds ({', '.join(c.sigma) or 'none'}), <part>_epsilon_rdp for parts "
                                        f"({', '.join(c.parts) or 'none'}) and the configuration's fields.")
    return row


@dataclass(frozen=True)
class Unit:
    """A learner unit's contract, declared once in its module as ``UNIT = Unit(...)``.

    ``event``, ``configure``, ``fit`` and ``fit_many`` are the module's functions (module docstring);
    ``fit_one(X, y, s, configured, rng)`` is ``fit_many`` of that one trial at ``configured.config`` (how this
    unit's ``fit_many`` is called, which differs by the trial's shape: one model, a λ grid, a γ grid);
    ``example(rng) -> (X, y, s, kwargs)`` a tiny accounted run of ``fit`` (the budget and hyperparameters in
    ``kwargs``) on which the contract is checked.
    """

    name: str
    event: Callable[[Any, int], Any]
    configure: Callable[..., Configured]
    fit: Callable[..., tuple[Any, Configured]]
    fit_many: Callable[..., Sequence[Any]]
    fit_one: Callable[[Any, Any, Any, Configured, np.random.Generator], Any]
    example: Callable[[np.random.Generator], tuple[Any, Any, Any, dict[str, Any]]]


def tiny_tabular(rng: np.random.Generator, n: int = 120, d: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A tiny tabular problem for :attr:`Unit.example`: standard-normal X, a noisy linear label, two groups."""
    X = rng.standard_normal((n, d))
    s = (rng.random(n) < 0.4).astype(np.int64)
    y = (X[:, 0] + 0.5 * s + 0.5 * rng.standard_normal(n) > 0).astype(np.int64)
    return X, y, s
