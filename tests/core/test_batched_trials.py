"""Batched trials (issue #23): a study's ``run_trials`` over a batch gives the bytes of one-at-a-time runs."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from repro.engine import runner
from repro.engine.cache import TrialCache
from repro.engine.results import write_results
from repro.engine.runner import RunConfig, dispatch_order, group_tasks, plan_trials, run_experiment
from repro.engine.spec import load_experiment
from repro.errors import TrialFailedError

FIXTURE = Path(__file__).parents[1] / "fixtures" / "batched" / "toy-batched.toml"


@pytest.fixture
def spec():
    return load_experiment(FIXTURE)


def written(spec, config: RunConfig) -> tuple[str, str]:
    """(trials.csv without its timing columns, summary.csv) as the run writes them."""
    directory = write_results(run_experiment(spec, config), command="repro run toy-batched", dataset_sha256={})
    trials = pd.read_csv(directory / "trials.csv").drop(columns=["seconds", "cached"])
    return trials.to_csv(index=False), (directory / "summary.csv").read_text()


def calls(folder: Path) -> list[int]:
    """Sizes of the ``run_trials`` calls made (one file per call)."""
    return sorted(int(p.name.split("-")[0]) for p in folder.iterdir())


@pytest.mark.parametrize(("batch", "jobs", "backend", "sizes"), [
    ("repetition", 1, "loky", [4, 4, 4]),
    ("repetition", 2, "loky", [4, 4, 4]),
    ("cell", 2, "loky", [3, 3, 3, 3]),
])
def test_batched_bytes_equal_one_at_a_time(spec, tmp_path: Path, batch: str, jobs: int, backend: str,
                                           sizes: list[int]) -> None:
    (tmp_path / "single").mkdir()
    (tmp_path / "batched").mkdir()
    one = written(spec, RunConfig(use_cache=False, out=tmp_path / "one",
                                  overrides={"batch": ["none"], "calls_dir": [str(tmp_path / "single")]}))
    many = written(spec, RunConfig(use_cache=False, out=tmp_path / "many", jobs=jobs, backend=backend,
                                   overrides={"batch": [batch], "calls_dir": [str(tmp_path / "batched")]}))
    assert calls(tmp_path / "single") == [1] * 12          # 4 cells x 3 repetitions, one at a time
    assert calls(tmp_path / "batched") == sizes            # the batches the study declared
    assert many == one


def test_batching_changes_numbers_only_if_a_trial_reads_another_stream(spec, tmp_path: Path) -> None:
    # the control: distinct trials give distinct draws, so equal bytes above are not an accident
    outcome = run_experiment(spec, RunConfig(use_cache=False, out=tmp_path))
    assert outcome.trials["value"].nunique() == 12
    assert outcome.trials.groupby("repetition")["shared"].nunique().eq(1).all()


def test_batched_trials_are_cached_one_by_one(spec, tmp_path: Path) -> None:
    first = run_experiment(spec, RunConfig(out=tmp_path))
    cache = TrialCache(tmp_path / ".cache", spec.id)
    assert all(cache.get(t.key) is not None for t in plan_trials(spec, RunConfig(out=tmp_path)))
    (tmp_path / "calls").mkdir()
    again = run_experiment(spec, RunConfig(out=tmp_path, overrides={"calls_dir": [str(tmp_path / "calls")]}))
    assert again.n_cached == 0  # calls_dir is a parameter, so another trial identity: all recomputed
    rerun = run_experiment(spec, RunConfig(out=tmp_path, overrides={"calls_dir": [str(tmp_path / "calls")]}))
    assert rerun.n_cached == 12 and calls(tmp_path / "calls") == [4, 4, 4]  # no call on the rerun
    pd.testing.assert_series_equal(first.trials["value"], again.trials["value"])


def test_a_failing_batch_fails_its_trials_only(spec, tmp_path: Path) -> None:
    config = RunConfig(out=tmp_path, overrides={"batch": ["cell"], "fail_x": [2.0]})
    with pytest.raises(TrialFailedError, match="3 of 12 trials"):
        run_experiment(spec, config)
    cache = TrialCache(tmp_path / ".cache", spec.id)
    cached = {(t.params["x"], t.context.repetition) for t in plan_trials(spec, config) if cache.get(t.key)}
    assert cached == {(x, r) for x in (0.0, 1.0, 3.0) for r in range(3)}


def test_groups_keep_the_plan_order(spec) -> None:
    tasks = plan_trials(spec, RunConfig())
    groups = group_tasks(tasks)
    assert [[t.index for t in g] for g in groups] == [[0, 3, 6, 9], [1, 4, 7, 10], [2, 5, 8, 11]]
    singles = group_tasks(plan_trials(spec, RunConfig(overrides={"batch": ["none"]})))
    assert [[t.index for t in g] for g in singles] == [[i] for i in range(12)]


def test_workers_start_every_cell_before_a_second_repetition_of_any(spec, tmp_path: Path) -> None:
    """A cell's first trial may compute a value its repetitions share (the DP-FERMI tuning search) while
    the others wait on its lock: dispatching the cells' first trials first lets two workers search two
    cells at once instead of one waiting (issue 23). The plan, and so every output, keeps its order."""
    tasks = plan_trials(spec, RunConfig(use_cache=False, out=tmp_path))
    order = dispatch_order(tasks)
    assert [t.context.repetition for t in order] == [0] * 4 + [1, 2] * 4       # 4 cells x 3 repetitions
    assert [t.index for t in order[:4]] == [0, 3, 6, 9]
    assert [t.index for t in order[4:]] == [i for i in range(12) if i % 3]  # the rest in the plan's order
    assert sorted(t.index for t in order) == list(range(12))


def test_the_runner_hands_out_trials_in_dispatch_order(spec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    handed: list[int] = []
    real = runner.run_tasks

    def spy(fn, batches, **kwargs):
        handed.extend(t.index for b in batches for t in b)
        return real(fn, batches, **kwargs)

    monkeypatch.setattr(runner, "run_tasks", spy)
    outcome = run_experiment(spec, RunConfig(use_cache=False, out=tmp_path, overrides={"batch": ["none"]}))
    assert handed == [0, 3, 6, 9, 1, 2, 4, 5, 7, 8, 10, 11]
    assert outcome.trials["repetition"].tolist() == [0, 1, 2] * 4            # trials.csv: the plan's order
