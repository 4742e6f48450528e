"""``--jobs 1`` against ``--jobs 2`` (issue #15, item 3), shared by the smoke and identity tests.

The smoke test of each experiment in :data:`JOBS_CHECKED` reruns it at ``--jobs 2`` and compares
with its own ``--jobs 1`` run (one smoke run saved per experiment, issue #24 item 8); experiments
with a cheaper identity grid (:data:`OVERRIDES`) keep their own test.
"""

from __future__ import annotations

import os

import pandas as pd

from repro.engine.runner import TIMING_UNIT, RunOutcome

#: the cheapest smoke experiment of each study module; bandit-regret is the BLAS-heavy one
CHEAPEST = ("bandit-regret", "compat-expmech-audit", "compat-fairnr", "compat-impossibility",
            "compat-sample-complexity", "dpfermi-fig-7", "thesis-fig-5.7", "thesis-ldp-theory",
            "thesis-table-3.3", "thesis-table-5.2", "thesis-theorem-8", "dpfermi-fig-5", "dpfermi-noise-sweep",
            "audit")
#: a cheaper grid for experiments whose whole smoke profile is slow (the identity check needs only a few cells)
OVERRIDES = {"audit": {"mechanism": ["laplace-step", "ldp-grr", "pfg-tree-mechanism"]}}


def check_all() -> bool:
    """``REPRO_TEST_JOBS_IDENTITY=all``: check every registered experiment in the identity test."""
    return os.environ.get("REPRO_TEST_JOBS_IDENTITY") == "all"


def checked_in_smoke(experiment_id: str) -> bool:
    """Whether the smoke test of ``experiment_id`` does its ``--jobs 2`` comparison."""
    return not check_all() and experiment_id in CHEAPEST and experiment_id not in OVERRIDES


def without_timings(frame: pd.DataFrame, spec) -> pd.DataFrame:
    timings = {"seconds", "cached", *(m.name for m in spec.metrics if m.unit == TIMING_UNIT)}
    return frame.drop(columns=[c for c in timings if c in frame])


def assert_identical(one: RunOutcome, two: RunOutcome) -> None:
    """Summary, trials and extra tables of two runs are byte-identical as written (timings aside)."""
    spec = one.spec
    assert one.summary.to_csv(index=False) == two.summary.to_csv(index=False)  # as write_results writes it
    # trials and extra tables too (row order is the plan's, whatever order trials finished in)
    assert without_timings(one.trials, spec).to_csv(index=False) == without_timings(two.trials, spec).to_csv(index=False)
    assert sorted(one.tables) == sorted(two.tables)
    for name in one.tables:  # tables may hold timings too (simulation_cpu_seconds, images_per_second)
        a, b = (t.drop(columns=[c for c in t if "second" in c]) for t in (one.tables[name], two.tables[name]))
        assert a.to_csv(index=False) == b.to_csv(index=False), name
