"""Study module of the declared-outputs tests: several records per trial (an internal sweep).

Params: ``x`` (number), ``lams`` (the internal sweep: one record per value, index ``lam``),
``extra`` (a key to add to every record, undeclared unless it is ``label``).
"""

from __future__ import annotations

from typing import Any

from repro.engine.study import Study
from repro.engine.trial import TrialContext, TrialOutput


def run_trial(params: dict[str, Any], ctx: TrialContext) -> TrialOutput:
    noise = float(ctx.rng().normal())
    records = []
    for lam in params["lams"]:
        rec = {"value": float(params["x"]) + lam + noise, "lam": float(lam), "label": "nominal"}
        if params.get("extra"):
            rec[str(params["extra"])] = 1.0
        records.append(rec)
    return TrialOutput(records=records)


STUDY = Study(run_trial=run_trial, index=("lam",), values=("label",), version="1")
