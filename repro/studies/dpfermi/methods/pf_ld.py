"""Baseline PF-LD (Tran, Fioretto, Van Hentenryck 2021b): DP-SGD on the Lagrangian, noisy dual ascent.

Spec: seed-004-dpfermi.md §8; learner :func:`repro.learners.baselines.train_pf_ld`.
"""

from __future__ import annotations

import math
from typing import Any

from repro.engine.trial import TrialContext
from repro.learners.baselines import pf_ld, train_pf_ld
from repro.studies.dpfermi._tabular import metrics
from repro.studies.dpfermi.methods._baseline import setup
from repro.studies.methods import Method

NAME = "pf-ld"
#: declared next to the learner (ε and δ are filled per cell)
GUARANTEE = pf_ld.guarantee(math.inf, 0.0)


def run(params: dict[str, Any], ctx: TrialContext, data: str, ds, parts: tuple) -> tuple[list, list, dict]:
    """One record (PF-LD has no knob)."""
    Xtr, ytr, str_, Xte, yte, ste = parts
    common, epochs, privacy = setup(NAME, params, ctx, Xtr)
    res = train_pf_ld(Xtr, ytr, str_, fairness=params["fairness"], epochs=epochs,
                      dual_lr=float(params["pf_ld_dual_lr"]), **common)
    records = [{"method": NAME, **metrics(res.model.predict(Xte), yte, ste, params["fairness"])}]
    privacy.update(noise_multiplier=res.noise_multiplier, dual_noise_multiplier=res.dual_noise_multiplier,
                   steps=res.steps, guarantee=GUARANTEE.with_epsilon(privacy["epsilon"], privacy["delta"]).describe())
    return records, [privacy], {}


METHOD = Method(name=NAME, run=run, guarantee=GUARANTEE, order=40, variant_independent=True,
                style={NAME: {"color": "tab:red", "label": "Tran et al. (2021b), PF-LD", "marker": "*", "markersize": 11}})
