"""``--jobs 1`` and ``--jobs 2`` give byte-identical results (issue #15, item 3).

One smoke experiment per study module (the cheapest of its family, plus bandit-regret, whose
results changed with the BLAS thread count before trials were pinned to one thread). The smoke
test of each of them (``test_every_experiment_smoke.py``) reruns it at ``--jobs 2`` and compares,
so its ``--jobs 1`` run is not repeated here; this file checks those with a cheaper grid. Set
``REPRO_TEST_JOBS_IDENTITY=all`` to check every registered experiment here (about 2.5 min on 2 cores).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from repro._testing.identity import CHEAPEST, OVERRIDES, assert_identical, check_all, checked_in_smoke
from repro.engine.runner import RunConfig, run_experiment
from repro.engine.spec import load_all

EXPERIMENTS = Path(__file__).parents[2] / "experiments"
SPECS = load_all(EXPERIMENTS)
CHECKED = sorted(SPECS) if check_all() else [i for i in CHEAPEST if not checked_in_smoke(i)]


def test_every_study_module_is_covered() -> None:
    assert {SPECS[i].trial for i in CHEAPEST} == {s.trial for s in SPECS.values()}
    # every one of them is checked: here, or by its smoke test
    assert all(i in CHECKED or checked_in_smoke(i) for i in CHEAPEST)


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
    assert_identical(one, two)
