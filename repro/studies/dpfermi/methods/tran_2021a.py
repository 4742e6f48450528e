"""Baseline Tran, Fioretto, Van Hentenryck (2021a): DP-SGD with a fairness penalty, one model per γ.

Spec: seed-004-dpfermi.md §8; the estimator :class:`repro.estimators.Tran2021aClassifier` (its γ path: one run of
:func:`repro.learners.baselines.train_tran_2021a`, whose guarantee is declared next to it; ε and δ are filled per
cell); run by :func:`repro.studies.dpfermi._tabular.run_declared`.
"""

from __future__ import annotations

import math

from repro.estimators import Tran2021aClassifier
from repro.learners.baselines import tran_2021a
from repro.studies.dpfermi._tabular import BASELINE_SGD, run_declared
from repro.studies.methods import Knob, Learner, Method, Param

METHOD = Method.declare(
    name="tran-2021a", guarantee=tran_2021a.guarantee(math.inf, 0.0), runner=run_declared,
    learner=Learner(Tran2021aClassifier, knob=Knob("gamma", "tran_gammas"),
                    params={**BASELINE_SGD, "epochs": Param("baseline_epochs", int)}, fixed={"fairness": "dp"},
                    reports=("noise_multiplier", "steps")),
    order=10, variant_independent=True, style={"color": "tab:blue", "label": "Tran et al. (2021a)"})
