"""Trivial study module used by the runner tests and ``benchmarks/runner_overhead.py``.

Params: ``x`` (number), optional ``fail_reps`` (repetitions that raise), ``require_data`` (a
registered data source the trial fetches), ``marker_dir`` (a folder
where each executed trial drops a file, to count executions across processes), ``warn`` (how many
``absl`` warnings each trial logs, like dp_accounting's accountant), ``sleep`` (seconds each
trial sleeps), ``interrupt_reps`` (repetitions that send their own process SIGINT, as Ctrl-C would); the ways a
trial's code can misbehave: ``exit_reps`` (``sys.exit(3)``), ``raise_interrupt_reps`` (``raise KeyboardInterrupt``
without a Ctrl-C), ``kill_reps`` (the process kills itself with SIGKILL, as the out-of-memory killer would) and
``segv_reps`` (a segmentation fault); with ``threads = true`` a
table ``threads`` records the largest native thread-pool size the trial runs under.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from repro.engine.study import Study
from repro.engine.trial import TrialContext, TrialOutput


def run_trial(params: dict[str, Any], ctx: TrialContext) -> TrialOutput:
    if params.get("require_data"):
        from repro.datasets import fetch

        fetch(params["require_data"])
    if ctx.repetition in params.get("fail_reps", []):
        raise RuntimeError(f"planned failure at repetition {ctx.repetition}")
    if params.get("marker_dir"):
        marker = Path(params["marker_dir"]) / f"{ctx.setting}-{ctx.repetition}-{os.getpid()}-{id(ctx)}"
        marker.touch()
    if ctx.repetition in params.get("interrupt_reps", []):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)   # the signal arrives first
    if ctx.repetition in params.get("exit_reps", []):
        sys.exit(3)
    if ctx.repetition in params.get("raise_interrupt_reps", []):
        raise KeyboardInterrupt
    if ctx.repetition in params.get("kill_reps", []):
        os.kill(os.getpid(), signal.SIGKILL)
    if ctx.repetition in params.get("segv_reps", []):
        import ctypes

        ctypes.string_at(0)
    if params.get("sleep"):
        time.sleep(float(params["sleep"]))
    for i in range(int(params.get("warn", 0))):
        logging.getLogger("absl").warning("toy accountant failed to converge at alpha=%s", 1.5 + i / 10)
    rng = ctx.rng()
    noise = float(rng.normal())
    shared = float(ctx.rng("split", scope="repetition").uniform())
    tables = {"draws": [{"k": k, "u": float(u)} for k, u in enumerate(rng.uniform(size=2))]}
    if params.get("threads"):
        from threadpoolctl import threadpool_info

        tables["threads"] = [{"max_threads": max((p["num_threads"] for p in threadpool_info()), default=1)}]
    return TrialOutput(
        records=[{"value": float(params.get("x", 0.0)) + noise, "shared": shared}],
        tables=tables,
    )


#: method "b" ignores the variant (runner test of shared cache entries)
STUDY = Study(run_trial=run_trial, variant_independent=("b",), version="1")
