"""Row "DP-FERMI (strict)" (ablation, no paper value): the paper's full ERMI, per-sample clipping of the joint
(θ, W) gradient, Poisson sampling, one noise multiplier calibrated by the PLD accountant to (ε′, δ′) for
privacy w.r.t. all features (``eps_total`` records it). Spec: seed-004 §4.4 (engine ``STRICT_ALL_FEATURES``)."""

from __future__ import annotations

import functools
import math

from repro.privacy.guarantee import Guarantee, Label, Neighbouring
from repro.studies.methods import Method
from repro.studies.thesis.methods._fermi import run_fermi

NAME = "DP-FERMI (strict)"
GUARANTEE = Guarantee(math.inf, 0.0, Label.PUBLIC_STATISTICS, Neighbouring.ADD_OR_REMOVE_ONE,
                      caveat="the group shares P-hat_S of the training data are treated as public",
                      accountant="PLD (dp_accounting), Poisson-subsampled Gaussian")

METHOD = Method(name=NAME, guarantee=GUARANTEE, order=30,
                style={NAME: {"color": "C2", "marker": "^", "alpha": 0.55}},
                run=functools.partial(run_fermi, NAME, "strict", GUARANTEE.label.value))
