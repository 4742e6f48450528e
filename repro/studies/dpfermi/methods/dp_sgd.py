"""Plain DP-SGD logistic regression (no fairness term), the DP-SGD learner unit at the cell's budget."""

import math

from repro.learners import dp_sgd, dp_sgd_unit
from repro.studies.dpfermi._tabular import run_declared
from repro.studies.methods import Learner, Method, Param

METHOD = Method.declare(
    name="dp-sgd", guarantee=dp_sgd.guarantee(math.inf, 0.0), runner=run_declared,
    learner=Learner(dp_sgd_unit.fit, params={"batch_size": Param("batch_size", int), "lr": Param("baseline_lr"),
                                             "clip_norm": Param("baseline_clip"),
                                             "epochs": Param("baseline_epochs", int)}),
    order=50, variant_independent=True, style={"color": "tab:purple", "label": "DP-SGD"})
