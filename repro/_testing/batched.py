"""Toy study with batched trials (runner tests of ``run_trials``, issue #23).

Params: ``x`` (number), ``batch`` (``"repetition"``: the cells of one repetition share a batch;
``"cell"``: the repetitions of one cell do; ``"none"``: no batching), optional ``calls_dir`` (a
folder where every ``run_trials`` call drops a file named by its batch size, to count calls across
processes; ``""``: none) and ``fail_x`` (a value of ``x`` whose trial raises). One trial is the one-model case of
:func:`run_trials`, so both paths run the same numpy calls.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import numpy as np

from repro.engine.study import Batching, Study
from repro.engine.trial import TrialContext, TrialOutput

_WEIGHTS = np.array([0.5, -1.25, 2.0])


def batch_key(params: dict[str, Any], ctx: TrialContext) -> Hashable | None:
    """Which trials may share one :func:`run_trials` call."""
    mode = params.get("batch", "repetition")
    if mode == "repetition":
        return ("rep", ctx.repetition)
    if mode == "cell":
        return ("cell", ctx.setting)
    return None


def run_trials(params_list: list[dict[str, Any]], contexts: list[TrialContext]) -> list[TrialOutput]:
    """All trials of a batch in one vectorised pass; each draws from its own ``ctx.rng()``."""
    if params_list and params_list[0].get("calls_dir"):
        Path(params_list[0]["calls_dir"], f"{len(params_list)}-{os.getpid()}-{uuid.uuid4().hex}").touch()
    for params in params_list:
        if float(params["x"]) == float(params["fail_x"]):
            raise RuntimeError(f"planned failure at x={params['x']}")
    x = np.array([float(p["x"]) for p in params_list])
    noise = np.stack([ctx.rng().normal(size=3) for ctx in contexts])          # (G, 3), own stream each
    shared = [float(ctx.rng("split", scope="repetition").uniform()) for ctx in contexts]
    value = x + (noise * _WEIGHTS[None, :]).sum(axis=1)
    return [TrialOutput(records=[{"value": float(v), "shared": sh}]) for v, sh in zip(value, shared, strict=True)]


def run_trial(params: dict[str, Any], ctx: TrialContext) -> TrialOutput:
    """One trial: the batch of one."""
    return run_trials([params], [ctx])[0]


STUDY = Study(run_trial=run_trial, batch=Batching(key=batch_key, run=run_trials), version="1")
