"""Row "DP-FERMI" of thesis Tables 3.1–3.4: the thesis's code path (one-term ERMI of the group listed first,
``fermi_code_group``) with the thesis's all-feature noise formulas. Spec: seed-003 §3.3; seed-004 §4.3."""

from __future__ import annotations

from repro.learners.dp_fermi_unit import ALL_FEATURE_REFERENCE
from repro.studies.methods import Method
from repro.studies.thesis.methods._fermi import fermi_row, run_fermi

NAME = "DP-FERMI"
#: nominal, and w.r.t. the relation the thesis's noise is calibrated for: its all-feature formulas (one whole
#: record replaced, seed-003 §3.3), not Theorem 3.3(a)'s sensitive-attribute relation that the DP-FERMI figures'
#: engine declares; declared by the learner unit, ε is filled per cell
GUARANTEE = ALL_FEATURE_REFERENCE

METHOD = Method.declare(name=NAME, learner=fermi_row("reference"), guarantee=GUARANTEE, runner=run_fermi,
                        order=10, style={"color": "C0", "marker": "s"})
