"""Baseline Jagielski et al. (2019): private reductions for equalized odds, one mixture per bound B.

Spec: seed-004-dpfermi.md §8; the estimator :class:`repro.estimators.Jagielski2019Classifier` (its bound path: one
batched run of :func:`repro.learners.baselines.train_jagielski_2019`, whose guarantee is declared next to it; ε and
δ are filled per cell); each record is the expected error of the uniform mixture of iterates (``predict_proba``,
``predict="expected"``); run by :func:`repro.studies.dpfermi._tabular.run_declared`.
"""

from __future__ import annotations

import math

from repro.estimators import Jagielski2019Classifier
from repro.learners.baselines import jagielski_2019
from repro.studies.dpfermi._tabular import BASELINE_SGD, run_declared
from repro.studies.methods import Knob, Learner, Method, Param

METHOD = Method.declare(
    name="jagielski-2019", guarantee=jagielski_2019.guarantee(math.inf, 0.0), runner=run_declared,
    learner=Learner(Jagielski2019Classifier, knob=Knob("bound", "jagielski_bounds"), predict="expected",
                    params={**BASELINE_SGD, "rounds": Param("jagielski_rounds", int),
                            "learner_epochs": Param("jagielski_learner_epochs", int)},
                    reports=("noise_multiplier", "steps", "laplace_epsilon_per_round")),
    order=20, variant_independent=True, style={"color": "tab:green", "label": "Jagielski et al. (2019)"})
