"""``--jobs 1`` and ``--jobs 2`` give byte-identical results (issue #15, item 3).

One smoke experiment per study module (the cheapest of its family, plus bandit-regret, whose
results changed with the BLAS thread count before trials were pinned to one thread). Set
``REPRO_TEST_JOBS_IDENTITY=all`` to check every registered experiment (about 2.5 min on 2 cores).
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

from repro.engine.runner import TIMING_UNIT, RunConfig, run_experiment
from repro.engine.spec import load_all

EXPERIMENTS = Path(__file__).parents[2] / "experiments"
SPECS = load_all(EXPERIMENTS)
#: the cheapest smoke experiment of each study module; bandit-regret is the BLAS-heavy one
CHEAPEST = ("bandit-regret", "compat-expmech-audit", "compat-fairnr", "compat-impossibility",
            "compat-sample-complexity", "dpfermi-fig-7", "thesis-fig-5.7", "thesis-ldp-theory",
            "thesis-table-3.3", "thesis-table-5.2", "thesis-theorem-8", "dpfermi-fig-5", "dpfermi-noise-sweep",
            "audit")
#: a cheaper grid for experiments whose whole smoke profile is slow (the identity check needs only a few cells)
OVERRIDES = {"audit": {"mechanism": ["laplace-step", "ldp-grr", "pfg-tree-mechanism"]}}
CHECKED = sorted(SPECS) if os.environ.get("REPRO_TEST_JOBS_IDENTITY") == "all" else CHEAPEST


def test_every_study_module_is_covered() -> None:
    assert {SPECS[i].trial for i in CHEAPEST} == {s.trial for s in SPECS.values()}


def without_timings(frame: pd.DataFrame, spec) -> pd.DataFrame:
    timings = {"seconds", "cached", *(m.name for m in spec.metrics if m.unit == TIMING_UNIT)}
    return frame.drop(columns=[c for c in timings if c in frame])


@pytest.mark.slow
@pytest.mark.parametrize("experiment_id", CHECKED)
def test_jobs_1_and_2_are_byte_identical(experiment_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         request: pytest.FixtureRequest) -> None:
    spec = SPECS[experiment_id]
    if spec.datasets:
        request.getfixturevalue("data_mirror")
        monkeypatch.setenv("REPRO_DATA_DIR", str(tmp_path / "data"))
    one, two = (run_experiment(spec, RunConfig(jobs=jobs, use_cache=False, out=tmp_path / f"j{jobs}",
                                               overrides=OVERRIDES.get(experiment_id, {})))
                for jobs in (1, 2))
    assert one.summary.to_csv(index=False) == two.summary.to_csv(index=False)  # as write_results writes it
    # trials and extra tables too (row order is the plan's, whatever order trials finished in)
    assert without_timings(one.trials, spec).to_csv(index=False) == without_timings(two.trials, spec).to_csv(index=False)
    assert sorted(one.tables) == sorted(two.tables)
    for name in one.tables:  # tables may hold timings too (simulation_cpu_seconds, images_per_second)
        a, b = (t.drop(columns=[c for c in t if "second" in c]) for t in (one.tables[name], two.tables[name]))
        assert a.to_csv(index=False) == b.to_csv(index=False), name
