"""Baseline Jagielski et al. (2019): private reductions for equalized odds, one mixture per bound B.

Spec: seed-004-dpfermi.md §8; learner :func:`repro.learners.baselines.train_jagielski_2019`.
"""

from __future__ import annotations

import math
from typing import Any

from repro.engine.trial import TrialContext
from repro.learners.baselines import jagielski_2019, train_jagielski_2019
from repro.studies.dpfermi._tabular import metrics
from repro.studies.dpfermi.methods._baseline import setup
from repro.studies.methods import Method

NAME = "jagielski-2019"
#: declared next to the learner (ε and δ are filled per cell)
GUARANTEE = jagielski_2019.guarantee(math.inf, 0.0)


def run(params: dict[str, Any], ctx: TrialContext, data: str, ds, parts: tuple) -> tuple[list, list, dict]:
    """One record per bound B of ``jagielski_bounds`` (expected error of the uniform mixture of iterates)."""
    Xtr, ytr, str_, Xte, yte, ste = parts
    common, _, privacy = setup(NAME, params, ctx, Xtr)
    res = train_jagielski_2019(Xtr, ytr, str_, bounds=[float(b) for b in params["jagielski_bounds"]],
                               rounds=int(params["jagielski_rounds"]),
                               learner_epochs=int(params["jagielski_learner_epochs"]), **common)
    P = res.predict_proba(Xte)
    records = [{"method": NAME, "knob": b, **metrics(P[:, j], yte, ste, params["fairness"])}
               for j, b in enumerate(res.bounds)]
    privacy.update(noise_multiplier=res.noise_multiplier, steps=res.steps,
                   laplace_epsilon_per_round=res.laplace_epsilon_per_round,
                   guarantee=GUARANTEE.with_epsilon(privacy["epsilon"], privacy["delta"]).describe())
    return records, [privacy], {}


METHOD = Method(name=NAME, run=run, guarantee=GUARANTEE, order=20, variant_independent=True,
                style={NAME: {"color": "tab:green", "label": "Jagielski et al. (2019)"}})
