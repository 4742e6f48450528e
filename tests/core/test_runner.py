"""The runner: determinism across workers, caching, resume after a kill, failures not cached."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from repro.engine.cache import TrialCache
from repro.engine.results import ResultBundle, write_results
from repro.engine.runner import RunConfig, plan_trials, run_experiment
from repro.engine.spec import load_experiment
from repro.engine.trial import TrialContext, TrialKey
from repro.errors import InvalidParameterError, TrialFailedError

FIXTURE = Path(__file__).parents[1] / "fixtures" / "experiments" / "toy.toml"


@pytest.fixture
def spec():
    return load_experiment(FIXTURE)


def sorted_trials(frame: pd.DataFrame) -> pd.DataFrame:
    cols = ["method", "setting", "repetition", "value", "shared"]
    return frame[cols].sort_values(["method", "setting", "repetition"]).reset_index(drop=True)


def test_identical_results_with_one_and_two_jobs(spec, tmp_path: Path) -> None:
    one = run_experiment(spec, RunConfig(jobs=1, out=tmp_path / "a"))
    two = run_experiment(spec, RunConfig(jobs=2, out=tmp_path / "b"))
    pd.testing.assert_frame_equal(sorted_trials(one.trials), sorted_trials(two.trials))
    pd.testing.assert_frame_equal(one.summary, two.summary)
    assert one.n_trials == 4 * 3 and two.n_cached == 0


def test_seed_depends_on_names_not_order(spec) -> None:
    tasks = plan_trials(spec, RunConfig())
    reversed_tasks = plan_trials(spec, RunConfig())[::-1]
    draws = {t.key: t.context.rng().normal() for t in tasks}
    assert all(draws[t.key] == t.context.rng().normal() for t in reversed_tasks)
    # Distinct trials get distinct streams; the shared stream is common across cells of a repetition.
    assert len({round(v, 12) for v in draws.values()}) == len(draws)
    a = TrialContext(TrialKey.of("toy", {"epsilon": 1.0, "method": "a"}, repetition=0)).rng("split", scope="repetition").uniform()
    b = TrialContext(TrialKey.of("toy", {"epsilon": 3.0, "method": "b"}, repetition=0)).rng("split", scope="repetition").uniform()
    c = TrialContext(TrialKey.of("toy", {"epsilon": 3.0, "method": "b"}, repetition=1)).rng("split", scope="repetition").uniform()
    assert a == b != c


def test_base_seed_changes_results(spec, tmp_path: Path) -> None:
    r0 = run_experiment(spec, RunConfig(out=tmp_path, use_cache=False))
    r1 = run_experiment(spec, RunConfig(out=tmp_path, use_cache=False, base_seed=1))
    assert not np.allclose(sorted_trials(r0.trials)["value"], sorted_trials(r1.trials)["value"])


def test_cache_hit_on_rerun_and_invalidated_when_config_changes(spec, tmp_path: Path) -> None:
    config = RunConfig(out=tmp_path)
    first = run_experiment(spec, config)
    assert first.n_cached == 0 and len(TrialCache(config.cache_root, "toy")) == 12
    second = run_experiment(spec, config)
    assert second.n_cached == 12
    pd.testing.assert_frame_equal(sorted_trials(first.trials), sorted_trials(second.trials))
    changed = run_experiment(spec, RunConfig(out=tmp_path, overrides={"x": [2.0]}))
    assert changed.n_cached == 0
    assert np.allclose(sorted_trials(changed.trials)["value"] - sorted_trials(first.trials)["value"], 1.0)
    forced = run_experiment(spec, RunConfig(out=tmp_path, force=True))
    assert forced.n_cached == 0


def test_failures_are_not_cached_and_rerun_completes(spec, tmp_path: Path) -> None:
    # Make repetition 1 fail through a fixed parameter the toy study understands.
    spec_fail = replace(spec, params={**spec.params, "fail_reps": [1]})
    with pytest.raises(TrialFailedError, match="4 of 12 trials .* failed") as info:
        run_experiment(spec_fail, RunConfig(out=tmp_path))
    assert "planned failure" in str(info.value)
    assert len(TrialCache(tmp_path / ".cache", "toy")) == 8  # the 8 successful ones
    fixed = replace(spec, params={**spec.params, "fail_reps": []})
    outcome = run_experiment(fixed, RunConfig(out=tmp_path))
    assert outcome.n_trials == 12 and outcome.n_cached == 0  # params changed, so keys changed


def test_killed_run_resumes_from_cache(spec, tmp_path: Path) -> None:
    config = RunConfig(out=tmp_path)
    calls = {"n": 0}

    def kill_after_five(done: int, total: int) -> None:
        calls["n"] += 1
        if done >= 5:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_experiment(spec, config, progress=kill_after_five)
    assert len(TrialCache(config.cache_root, "toy")) == 5
    # Nothing that looks complete was written.
    assert not (tmp_path / "toy").exists()
    resumed = run_experiment(spec, config)
    assert resumed.n_cached == 5 and resumed.n_trials == 12
    fresh = run_experiment(spec, RunConfig(out=tmp_path / "fresh"))
    pd.testing.assert_frame_equal(sorted_trials(resumed.trials), sorted_trials(fresh.trials))


def test_interrupted_write_leaves_previous_results(spec, tmp_path: Path, monkeypatch) -> None:
    config = RunConfig(out=tmp_path)
    outcome = run_experiment(spec, config)
    directory = write_results(outcome, command="repro run toy", dataset_sha256={})
    before = (directory / "summary.csv").read_text()

    def boom(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("repro.engine.results.draw_figures", boom)
    with pytest.raises(KeyboardInterrupt):
        write_results(run_experiment(spec, RunConfig(out=tmp_path, overrides={"x": [9.0]})),
                      command="x", dataset_sha256={})
    assert (directory / "summary.csv").read_text() == before
    assert [p.name for p in (tmp_path / "toy").iterdir()] == ["smoke"]  # no partial folder left


def test_written_results_have_documented_columns(spec, tmp_path: Path) -> None:
    outcome = run_experiment(spec, RunConfig(out=tmp_path, profile="full"))
    directory = write_results(outcome, command="repro run toy --profile full", dataset_sha256={})
    bundle = ResultBundle.load(spec, directory)
    assert list(bundle.summary.columns[:15]) == ["result_id", "method", "setting", "metric", "n", "mean", "std",
                                                  "paper", "diff", "tolerance", "within", "comparable",
                                                  "paper_source", "condition", "dataset"]
    row = bundle.summary.query("method == 'a' and setting == 'epsilon=1.0' and metric == 'value'").iloc[0]
    values = outcome.trials.query("method == 'a' and setting == 'epsilon=1.0'")["value"]
    assert row["n"] == 5 and row["paper"] == 1.0 and bool(row["comparable"])
    assert row["mean"] == pytest.approx(values.mean()) and row["std"] == pytest.approx(values.std(ddof=1))
    assert row["diff"] == pytest.approx(values.mean() - 1.0)
    assert bool(row["within"]) == (abs(values.mean() - 1.0) <= 0.5)
    # Rows without a paper value leave the comparison columns empty.
    other = bundle.summary.query("method == 'b'")
    assert other["paper"].isna().all() and other["within"].isna().all()
    assert set(bundle.table("draws").columns) >= {"result_id", "method", "setting", "repetition", "k", "u"}
    assert bundle.run["status"] == "complete" and bundle.run["n_trials"] == 20
    # The smoke profile keeps the paper's value as context: not comparable, never a False verdict.
    smoke = run_experiment(spec, RunConfig(out=tmp_path)).summary
    row = smoke.query("method == 'a' and setting == 'epsilon=1.0' and metric == 'value'").iloc[0]
    assert row["paper"] == 1.0 and row["comparable"] is False and row["condition"] == "profile: smoke ≠ full"
    assert row["within"] is None and row["diff"] is None


def test_run_config_rejects_bad_values() -> None:
    with pytest.raises(InvalidParameterError, match="backend"):
        RunConfig(backend="spark")
    with pytest.raises(InvalidParameterError, match="--seeds"):
        RunConfig(seeds=0)
    with pytest.raises(InvalidParameterError, match="delta"):
        RunConfig(overrides={"delta": [2.0]})


def test_unknown_set_key_lists_settable(spec) -> None:
    with pytest.raises(InvalidParameterError, match="settable: epsilon, method, x"):
        plan_trials(spec, RunConfig(overrides={"lambda": [1.0]}))


def test_variant_independent_methods_share_cache_entries(tmp_path: Path) -> None:
    # the study declares method "b" variant-independent: a second variant reruns only method "a"
    text = FIXTURE.read_text().replace('trial = "repro._testing.trials"',
                                       'trial = "repro._testing.trials"\nvariants = ["paper", "reference"]')
    path = tmp_path / "toy.toml"
    path.write_text(text)
    spec = load_experiment(path)
    first = run_experiment(spec, RunConfig(jobs=1, out=tmp_path / "r"))
    second = run_experiment(spec, RunConfig(jobs=1, out=tmp_path / "r", variant="reference"))
    assert first.n_cached == 0 and second.n_cached == 6 and second.n_trials == 12
    a, b = sorted_trials(first.trials), sorted_trials(second.trials)
    pd.testing.assert_frame_equal(a, b)     # same seeds, and the toy ignores the variant


def test_timing_metrics_stay_out_of_the_summary(spec, tmp_path: Path) -> None:
    """Issue #15 item 4: a metric in seconds differs between runs, so summary.csv must not hold it."""
    timed = replace(spec, metrics=(replace(spec.metrics[0], unit="s"), *spec.metrics[1:]))
    outcome = run_experiment(timed, RunConfig(out=tmp_path))
    assert "value" in outcome.trials.columns
    assert set(outcome.summary["metric"]) == {"shared"}


def test_every_experiment_declares_its_timing_metrics() -> None:
    """A metric measuring seconds must have unit "s", or it would land in summary.csv."""
    from repro.engine.spec import load_all

    for spec in load_all(Path(__file__).parents[2] / "experiments").values():
        for metric in spec.metrics:
            if "second" in metric.name or "seconds" in metric.description.split()[:2]:
                assert metric.unit == "s", f"{spec.id}: metric {metric.name!r} needs unit = \"s\""


def test_a_run_keeps_compiled_programs_under_its_cache_unless_told_otherwise(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """``repro run`` lets its processes keep JAX's compiled programs in DIR/.cache/xla (an absolute path, read
    by workers whatever their folder), none under ``--no-cache``; a folder the user named wins."""
    from repro.engine.runner import _keep_compiled_programs

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("REPRO_XLA_CACHE", raising=False)
    _keep_compiled_programs(RunConfig(out=Path("results")))
    assert Path(os.environ["REPRO_XLA_CACHE"]) == tmp_path / "results" / ".cache" / "xla"
    monkeypatch.delenv("REPRO_XLA_CACHE")
    _keep_compiled_programs(RunConfig(out=Path("results"), use_cache=False))
    assert os.environ["REPRO_XLA_CACHE"] == "off"
    monkeypatch.setenv("REPRO_XLA_CACHE", "/somewhere/else")
    _keep_compiled_programs(RunConfig(out=Path("results")))
    assert os.environ["REPRO_XLA_CACHE"] == "/somewhere/else"
