"""Baseline PF-LD (Tran, Fioretto, Van Hentenryck 2021b): DP-SGD on the Lagrangian, noisy dual ascent.

Spec: seed-004-dpfermi.md §8; learner :func:`repro.learners.baselines.train_pf_ld`.
"""

from __future__ import annotations

import math
from typing import Any

from repro.engine.trial import TrialContext
from repro.learners.baselines import train_pf_ld
from repro.privacy.guarantee import Guarantee, Label, Neighbouring
from repro.studies.dpfermi._tabular import metrics
from repro.studies.dpfermi.methods._baseline import COUPLING, setup
from repro.studies.methods import Method

NAME = "pf-ld"
GUARANTEE = Guarantee(math.inf, 0.0, Label.NOMINAL, Neighbouring.ADD_OR_REMOVE_ONE,
                      caveat="the fairness penalty couples the samples of a batch, so per-sample clipping does "
                             "not bound the sensitivity", accountant="RDP (dp_accounting)")


def run(params: dict[str, Any], ctx: TrialContext, data: str, ds, parts: tuple) -> tuple[list, list, dict]:
    """One record (PF-LD has no knob)."""
    Xtr, ytr, str_, Xte, yte, ste = parts
    common, epochs, privacy = setup(NAME, params, ctx, Xtr)
    res = train_pf_ld(Xtr, ytr, str_, fairness=params["fairness"], epochs=epochs,
                      dual_lr=float(params.get("pf_ld_dual_lr", 0.5)), **common)
    records = [{"method": NAME, **metrics(res.model.predict(Xte), yte, ste, params["fairness"])}]
    privacy.update(noise_multiplier=res.noise_multiplier, dual_noise_multiplier=res.dual_noise_multiplier,
                   steps=res.steps, guarantee=COUPLING)
    return records, [privacy], {}


METHOD = Method(name=NAME, run=run, guarantee=GUARANTEE, order=40, variant_independent=True,
                style={NAME: {"color": "tab:red", "label": "Tran et al. (2021b), PF-LD", "marker": "*", "markersize": 11}})
