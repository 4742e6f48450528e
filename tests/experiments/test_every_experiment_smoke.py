"""Every registered experiment runs under its smoke profile and writes complete results.

Experiments that need datasets use the data mirror (``REPRO_DATA_MIRROR``); without it they skip,
except under ``CI=true`` where they must run. The cheapest experiment of each study module is also
rerun at ``--jobs 2`` and compared with this ``--jobs 1`` run (``repro._testing.identity``).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from repro._testing.identity import assert_identical, checked_in_smoke
from repro.engine.results import ResultBundle, report_hook, write_results
from repro.engine.runner import RunConfig, run_experiment
from repro.engine.spec import load_all, study_of

EXPERIMENTS = Path(__file__).parents[2] / "experiments"
SPECS = load_all(EXPERIMENTS)


@pytest.mark.parametrize("experiment_id", sorted(SPECS))
def test_smoke_profile_runs(experiment_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                            request: pytest.FixtureRequest) -> None:
    spec = SPECS[experiment_id]
    for extra in study_of(spec).requires:  # the study's declaration, checked against the file
        if importlib.util.find_spec(extra) is None:
            if os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}:
                pytest.fail(f"{experiment_id} needs {extra!r} (an optional extra) under CI=true", pytrace=False)
            pytest.skip(f"{experiment_id} needs the optional {extra!r} (pip install -e \".[vision]\")")
    if spec.datasets:
        request.getfixturevalue("data_mirror")
        # a fresh data cache, except the UTKFace images, extracted once per test process (see the fixture)
        utkface = any(name.startswith("utkface") for name in spec.datasets)
        data = request.getfixturevalue("utkface_data_cache") if utkface else tmp_path / "data"
        monkeypatch.setenv("REPRO_DATA_DIR", str(data))
    outcome = run_experiment(spec, RunConfig(profile="smoke", out=tmp_path, jobs=1))
    if checked_in_smoke(experiment_id):  # --jobs 2 gives the same bytes (the identity test's check)
        assert_identical(outcome, run_experiment(spec, RunConfig(profile="smoke", out=tmp_path / "j2", jobs=2,
                                                                 use_cache=False)))
    directory = write_results(outcome, command=f"repro run {experiment_id}", dataset_sha256={})
    bundle = ResultBundle.load(spec, directory)
    assert not bundle.summary.empty
    assert set(bundle.summary["metric"]) <= set(spec.metric_names)
    if report_hook(spec, "plot") is not None:
        figures = bundle.run["figures"]
        assert figures, "a study with a plot function must draw at least one figure"
        for name in figures:
            assert (directory / name).exists() and (directory / name).with_suffix(".pdf").exists()
