"""Baseline PF-LD (Tran, Fioretto, Van Hentenryck 2021b): DP-SGD on the Lagrangian, noisy dual ascent; no knob.

Spec: seed-004-dpfermi.md §8; the estimator :class:`repro.estimators.PFLDClassifier` (over
:func:`repro.learners.baselines.train_pf_ld`, whose guarantee is declared next to it; ε and δ are filled per cell);
run by :func:`repro.studies.dpfermi._tabular.run_declared`.
"""

from __future__ import annotations

import math

from repro.estimators import PFLDClassifier
from repro.learners.baselines import pf_ld
from repro.studies.dpfermi._tabular import BASELINE_SGD, run_declared
from repro.studies.methods import Learner, Method, Param

METHOD = Method.declare(
    name="pf-ld", guarantee=pf_ld.guarantee(math.inf, 0.0), runner=run_declared,
    learner=Learner(PFLDClassifier, params={**BASELINE_SGD, "fairness": Param("fairness", str),
                                            "epochs": Param("baseline_epochs", int), "dual_lr": Param("pf_ld_dual_lr")},
                    reports=("noise_multiplier", "dual_noise_multiplier", "steps")),
    order=40, variant_independent=True,
    style={"color": "tab:red", "label": "Tran et al. (2021b), PF-LD", "marker": "*", "markersize": 11})
