"""Baseline Tran, Fioretto, Van Hentenryck (2021a): DP-SGD with a fairness penalty, one model per γ.

Spec: seed-004-dpfermi.md §8; learner :func:`repro.learners.baselines.train_tran_2021a`.
"""

from __future__ import annotations

import math
from typing import Any

from repro.engine.trial import TrialContext
from repro.learners.baselines import train_tran_2021a, tran_2021a
from repro.studies.dpfermi._tabular import metrics
from repro.studies.dpfermi.methods._baseline import setup
from repro.studies.methods import Method

NAME = "tran-2021a"
#: declared next to the learner (ε and δ are filled per cell)
GUARANTEE = tran_2021a.guarantee(math.inf, 0.0)


def run(params: dict[str, Any], ctx: TrialContext, data: str, ds, parts: tuple) -> tuple[list, list, dict]:
    """One record per γ of ``tran_gammas``."""
    Xtr, ytr, str_, Xte, yte, ste = parts
    common, epochs, privacy = setup(NAME, params, ctx, Xtr)
    res = train_tran_2021a(Xtr, ytr, str_, gammas=[float(g) for g in params["tran_gammas"]],
                           epochs=epochs, fairness="dp", **common)
    records = [{"method": NAME, "knob": g, **metrics(model.predict(Xte), yte, ste, params["fairness"])}
               for g, model in zip(res.gammas, res.models, strict=True)]
    privacy.update(noise_multiplier=res.noise_multiplier, steps=res.steps, guarantee=GUARANTEE.with_epsilon(privacy["epsilon"], privacy["delta"]).describe())
    return records, [privacy], {}


METHOD = Method(name=NAME, run=run, guarantee=GUARANTEE, order=10, variant_independent=True,
                style={NAME: {"color": "tab:blue", "label": "Tran et al. (2021a)"}})
