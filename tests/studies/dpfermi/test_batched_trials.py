"""A tabular DP-FERMI trial gives the same records alone, in a batch of 1, in a batch of many (the runner's
grouping of a cell's repetitions) and under ``--jobs 1`` and ``--jobs 2`` (issue 34, item 2)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
import pytest

from repro.engine.runner import RunConfig, group_tasks, plan_trials, run_experiment
from repro.engine.spec import load_experiment
from repro.studies.dpfermi import tradeoff_figures as study

SPEC = load_experiment(Path(__file__).parents[3] / "experiments" / "dpfermi-fig-3.toml")
TINY = {"method": ["dp-fermi"], "subsample": [500], "epsilon": [1.0]}


def _tasks(seeds: int, data: str, variant: str = "reference") -> list:
    config = RunConfig(profile="smoke", seeds=seeds, use_cache=False, variant=variant,
                       overrides=SPEC.coerce_overrides({**TINY, "data": [data]}))
    return plan_trials(SPEC, config)


def _records(outputs) -> list[list[dict]]:
    return [[{k: v for k, v in r.items()} for r in out.records] for out in outputs]


@pytest.mark.slow
@pytest.mark.parametrize(("data", "variant"), [("authors", "reference"), ("clean", "reference"),
                                               ("clean", "strict")])
def test_a_trial_alone_equals_it_in_batches(data: str, variant: str, data_mirror, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPRO_DATA_DIR", str(tmp_path / "data"))
    tasks = _tasks(7, data, variant)
    alone = [study.STUDY.run_trial(dict(t.params), t.context) for t in tasks]
    one = [study.STUDY.batch.run([dict(t.params)], [t.context])[0] for t in tasks]
    many = study.STUDY.batch.run([dict(t.params) for t in tasks], [t.context for t in tasks])
    assert _records(one) == _records(alone)          # exact equality, float for float
    assert _records(many) == _records(alone)
    assert [o.tables for o in many] == [o.tables for o in alone]
    # the records differ between repetitions (the comparison above could not pass by sameness)
    assert _records(alone)[0] != _records(alone)[1]


def test_the_runner_groups_a_cells_repetitions_by_batch_trials() -> None:
    tasks = _tasks(7, "authors")
    batches = group_tasks(tasks)
    assert [len(b) for b in batches] == [study.BATCH_TRIALS, 7 - study.BATCH_TRIALS]
    assert [t.context.repetition for b in batches for t in b] == list(range(7))


def test_baselines_and_user_methods_run_one_at_a_time() -> None:
    config = RunConfig(profile="smoke", seeds=2, use_cache=False,
                       overrides=SPEC.coerce_overrides({"subsample": [500], "epsilon": [1.0]}))
    tasks = plan_trials(SPEC, config)
    for task in tasks:
        key = study.STUDY.batch.key(dict(task.params), task.context)
        assert (key is None) == (task.params["method"] != "dp-fermi")


@pytest.mark.slow
def test_jobs_1_and_2_and_unbatched_give_the_same_trials(data_mirror, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPRO_DATA_DIR", str(tmp_path / "data"))
    overrides = SPEC.coerce_overrides({**TINY, "data": ["clean"]})

    def trials(jobs: int, name: str) -> pd.DataFrame:
        out = run_experiment(SPEC, RunConfig(profile="smoke", seeds=3, jobs=jobs, use_cache=False,
                                             out=tmp_path / name, overrides=overrides))
        return out.trials.drop(columns="seconds")

    batched1, batched2 = trials(1, "j1"), trials(2, "j2")
    monkeypatch.setattr(study, "STUDY", dataclasses.replace(study.STUDY, batch=None))  # every trial alone (in-process)
    unbatched = trials(1, "alone")
    pd.testing.assert_frame_equal(batched1, batched2)
    pd.testing.assert_frame_equal(batched1, unbatched)
