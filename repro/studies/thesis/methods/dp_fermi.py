"""Row "DP-FERMI" of thesis Tables 3.1–3.4: the thesis's code path (one-term ERMI of the group listed first,
``fermi_code_group``) with the thesis's all-feature noise formulas. Spec: seed-003 §3.3; seed-004 §4.3."""

from __future__ import annotations

import functools
import math

from repro.learners.dp_fermi import REFERENCE
from repro.learners.dp_fermi import guarantee as dp_fermi_guarantee
from repro.studies.methods import Method
from repro.studies.thesis.methods._fermi import run_fermi

NAME = "DP-FERMI"
#: the engine's declaration for its code path (nominal: the minibatch gradient is clipped, not each sample's);
#: ε is filled per cell
GUARANTEE = dp_fermi_guarantee(REFERENCE, math.inf, 0.0)

METHOD = Method(name=NAME, guarantee=GUARANTEE, order=10, style={NAME: {"color": "C0", "marker": "s"}},
                run=functools.partial(run_fermi, NAME, "reference", GUARANTEE.label.value))
