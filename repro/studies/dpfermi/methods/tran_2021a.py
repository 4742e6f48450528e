"""Baseline Tran, Fioretto, Van Hentenryck (2021a): DP-SGD with a fairness penalty, one model per γ.

Spec: seed-004-dpfermi.md §8; learner :func:`repro.learners.baselines.train_tran_2021a`, whose guarantee is
declared next to it (ε and δ are filled per cell); run by :func:`repro.studies.dpfermi._tabular.run_declared`.
"""

from __future__ import annotations

import math

from repro.learners.baselines import train_tran_2021a, tran_2021a
from repro.studies.dpfermi._tabular import BASELINE_SGD, run_declared
from repro.studies.methods import Knob, Learner, Method, Param

METHOD = Method.declare(
    name="tran-2021a", guarantee=tran_2021a.guarantee(math.inf, 0.0), runner=run_declared,
    learner=Learner(train_tran_2021a, knob=Knob("gammas", "tran_gammas"), predict="models",
                    params={**BASELINE_SGD, "epochs": Param("baseline_epochs", int)}, fixed={"fairness": "dp"},
                    reports=("noise_multiplier", "steps")),
    order=10, variant_independent=True, style={"color": "tab:blue", "label": "Tran et al. (2021a)"})
