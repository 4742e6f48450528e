"""Row "DP-FERMI (other group order)": the thesis's DP-FERMI code with the other group's ERMI term surviving
the 1×1 trace (what the authors' code gives when pandas lists the other group first). Spec: seed-004 §4.3."""

from __future__ import annotations

from repro.studies.methods import Method
from repro.studies.thesis.methods._fermi import fermi_row, run_fermi
from repro.studies.thesis.methods.dp_fermi import GUARANTEE

NAME = "DP-FERMI (other group order)"

METHOD = Method.declare(name=NAME, learner=fermi_row("reference", other_group=True),
                        guarantee=GUARANTEE, runner=run_fermi, order=20,
                        style={"color": "C7", "marker": "v", "alpha": 0.55})
