"""Plain DP-SGD logistic regression (no fairness term): the DP-SGD estimator
(:class:`repro.estimators.DPSGDLogisticClassifier`, the learner unit's budget-taking ``fit``) at the cell's
(ε, δ = 1/n²) on the features alone, with the baselines' SGD settings; one point per ε. A reference method, in no figure by
default: add ``"dp-sgd"`` to an experiment's ``method`` axis (and its ``[domains]``) to draw it.
Spec: seed-003-thesis.md §3.2 (the DP-SGD mechanism); seed-004-dpfermi.md §8 (the baselines' SGD settings).
"""

from __future__ import annotations

import math

from repro.estimators import DPSGDLogisticClassifier
from repro.learners import dp_sgd
from repro.studies.dpfermi._tabular import run_declared
from repro.studies.methods import Learner, Method, Param

METHOD = Method.declare(
    name="dp-sgd", guarantee=dp_sgd.guarantee(math.inf, 0.0), runner=run_declared,
    learner=Learner(DPSGDLogisticClassifier, groups=False, reports=("noise_multiplier", "steps"),
                    params={"batch_size": Param("batch_size", int), "lr": Param("baseline_lr"),
                            "clip_norm": Param("baseline_clip"), "epochs": Param("baseline_epochs", int)}),
    order=50, variant_independent=True, style={"color": "tab:purple", "label": "DP-SGD", "marker": "D"})
