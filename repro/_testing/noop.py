"""A study whose trial does nothing: measures pure orchestration cost (benchmarks/runner_overhead.py)."""

from __future__ import annotations

from typing import Any

from repro.engine.study import Study
from repro.engine.trial import TrialContext


def run_trial(params: dict[str, Any], ctx: TrialContext) -> dict[str, float]:
    return {"value": float(ctx.repetition)}


STUDY = Study(run_trial=run_trial, version="1")
