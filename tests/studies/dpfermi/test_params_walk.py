"""The walk of ``params`` through the DP-FERMI figures' method into its learner unit and back, counted as
ARCHITECTURE.md states it ("The walk of `params`"): the distinct functions of ``studies/``, ``learners/`` and
``fairness/`` one trial visits, traced; the engine's training and draws, the privacy layer's primitives below the
unit and dataclass accessors are not stops. The test keeps the stated counts true (a longer walk fails here)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from repro.studies.dpfermi import methods
from repro.studies.methods import Trial

#: not stops: the training engine (compiled program, batch rows, the reference engine's draws), the metrics'
#: arithmetic, the privacy layer below the unit, dataclass accessors
_NOT_STOPS = ("repro.learners.dp_fermi_compiled", "repro.learners.batch_rows", "repro.learners._jax",
              "repro.learners.logistic", "repro.fairness.metrics", "repro.errors", "repro.privacy.",
              "repro.learners.dp_fermi._", "repro.learners.dp_fermi.noise_stds", "repro.learners.dp_fermi.with_",
              "repro.learners.dp_fermi.per_sample_privacy", "repro.learners.unit.conditions_ok")
_SKIP_NAMES = {"<genexpr>", "<listcomp>", "<dictcomp>", "<setcomp>", "<lambda>", "__init__", "__post_init__",
               "__hash__", "__eq__", "__repr__"}

#: the counts ARCHITECTURE.md gives
STOPS = {"strict": 13, "reference": 15}


class _Ctx:
    repetition = 0

    def __init__(self) -> None:
        self.count = 0

    def rng(self, *labels, scope: str = "trial") -> np.random.Generator:
        self.count += 1
        return np.random.default_rng(self.count)


def stops(variant: str) -> list[str]:
    """The stops of one trial of the DP-FERMI method at ``variant`` on a tiny problem (fixed (L, D, η_θ))."""
    params = {"epsilon": 2.0, "fairness": "dp", "batch_size": 32, "epochs": 2, "lr_theta": 0.005, "lr_w": 0.01,
              "lambdas": [0.0, 1.0], "strict_lambdas": [0.0, 1.0], "hyperparameters": ["fixed"], "fixed_clip": 5.0,
              "fixed_radius": 5.0, "variant": variant}
    rng = np.random.default_rng(0)
    X, s = rng.normal(size=(160, 3)), (rng.random(160) < 0.4).astype(np.int64)
    y = (X[:, 0] + 0.5 * s + rng.normal(size=160) > 0).astype(np.int64)
    trial = Trial(params, _Ctx(), "clean", None, (X[:120], y[:120], s[:120], X[120:], y[120:], s[120:]))
    method = methods.get("dp-fermi")
    method.run(trial)                      # warm the accountant's caches: count the walk, not the first call
    seen: list[str] = []

    def profile(frame, event, arg) -> None:
        if event != "call":
            return
        name = f"{frame.f_globals.get('__name__', '')}.{frame.f_code.co_name}"
        if name.startswith("repro.") and not name.startswith(_NOT_STOPS) and frame.f_code.co_name not in _SKIP_NAMES:
            seen.append(name)

    sys.setprofile(profile)
    try:
        method.run(Trial(params, _Ctx(), "clean", None, trial.parts))
    finally:
        sys.setprofile(None)
    return list(dict.fromkeys(seen))


@pytest.mark.parametrize("variant", sorted(STOPS))
def test_the_walk_of_params_is_as_long_as_stated(variant: str) -> None:
    walk = stops(variant)
    assert len(walk) <= STOPS[variant], walk
    assert walk[0] == "repro.studies.methods.__call__" and "repro.learners.dp_fermi_unit.configure" in walk
    assert "repro.learners.unit.privacy_row" in walk
