"""Study module of ``experiments/audit.toml``: one privacy audit per (mechanism, instance) cell.

``instance = "claimed"`` audits the mechanism as the project runs and accounts it; ``"broken"`` runs
the broken-mechanism control (:mod:`repro.studies.audit.mechanisms`). Each trial draws its randomness
from ``ctx.rng()``, whose seed is keyed by the cell (mechanism and instance names), so an audit's
result does not depend on which other mechanisms run beside it (issue 20, items 3 and 5).
"""

from __future__ import annotations

import math
from typing import Any

from repro.engine.trial import TrialContext, TrialOutput
from repro.studies.audit.mechanisms import MECHANISMS, AuditResult, audit

VERSION = "1"
INSTANCES = ("claimed", "broken")
#: columns of the ``audit`` table (audit.csv), one row per audited instance
TABLE_COLUMNS = ("mechanism", "instance", "label", "claimed_epsilon", "delta", "achievable_epsilon",
                 "achievable_how", "audited_epsilon", "ratio", "confidence", "method", "runs_per_side",
                 "verdict", "control", "note")


def table_row(r: AuditResult, instance: str) -> dict[str, Any]:
    """One row of the ``audit`` table."""
    return {"mechanism": r.mechanism, "instance": instance, "label": r.label.value, "claimed_epsilon": r.claimed_epsilon,
            "delta": r.delta, "achievable_epsilon": r.achievable_epsilon, "achievable_how": r.achievable_how,
            "audited_epsilon": r.audited_epsilon, "ratio": r.ratio, "confidence": r.confidence, "method": r.method,
            "runs_per_side": r.runs_per_side, "verdict": r.verdict, "control": MECHANISMS[r.mechanism].control,
            "note": r.note}


def run_trial(params: dict[str, Any], ctx: TrialContext) -> TrialOutput:
    """Audit ``params["mechanism"]`` (instance ``params["instance"]``) with the runs of ``params["budget"]``."""
    name, instance = params["mechanism"], params["instance"]
    if instance not in INSTANCES:
        raise ValueError(f"instance must be one of {INSTANCES}; got {instance!r}")
    if instance == "broken" and not MECHANISMS[name].control:
        nan = math.nan
        return TrialOutput(records=[{"claimed_epsilon": nan, "achievable_epsilon": nan, "audited_epsilon": nan,
                                     "ratio": nan, "exceeded": nan}])
    r = audit(name, params["budget"], ctx.rng(), broken=instance == "broken")
    return TrialOutput(
        records=[{"claimed_epsilon": r.claimed_epsilon, "achievable_epsilon": r.achievable_epsilon,
                  "audited_epsilon": r.audited_epsilon, "ratio": r.ratio, "exceeded": float(r.exceeded)}],
        tables={"audit": [table_row(r, instance)]})
