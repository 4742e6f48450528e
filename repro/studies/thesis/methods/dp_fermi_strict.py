"""Row "DP-FERMI (strict)" (ablation, no paper value): the paper's full ERMI, per-sample clipping of the joint
(θ, W) gradient, Poisson sampling, one noise multiplier calibrated by the PLD accountant to (ε′, δ′) for
privacy w.r.t. all features (``eps_total`` records it). Spec: seed-004 §4.4 (engine ``STRICT_ALL_FEATURES``)."""

from __future__ import annotations

import math

from repro.learners.dp_fermi_unit import VARIANTS, guarantee
from repro.studies.methods import Method
from repro.studies.thesis.methods._fermi import fermi_row, run_fermi

NAME = "DP-FERMI (strict)"
#: the engine's declaration for per-sample clipping of the joint gradient (P-hat_S public); ε filled per cell
GUARANTEE = guarantee(VARIANTS["strict-all"], math.inf, 0.0)

METHOD = Method.declare(name=NAME, learner=fermi_row("strict-all"), guarantee=GUARANTEE,
                        runner=run_fermi, order=30, style={"color": "C2", "marker": "^", "alpha": 0.55})
