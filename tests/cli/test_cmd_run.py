"""`repro run`, `list`, `plot`, `report` through click's CliRunner: happy paths and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import main


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_list_shows_experiments_and_ids(toy_env: Path) -> None:
    result = invoke("list")
    assert result.exit_code == 0 and "toy" in result.output and "results: none" in result.output
    ids = invoke("list", "--ids")
    assert ids.output.split() == ["toy"]


def test_run_writes_results_and_prints_comparison(toy_env: Path) -> None:
    result = invoke("run", "toy", "--jobs", "2", "--quiet")
    assert result.exit_code == 0, result.output
    directory = toy_env / "toy" / "smoke"
    for name in ("trials.csv", "summary.csv", "run.json", "tables/draws.csv"):
        assert (directory / name).exists(), name
    run = json.loads((directory / "run.json").read_text())
    assert run["status"] == "complete" and run["jobs"] == 2 and "numpy" in run["versions"]
    shown = invoke("run", "toy")
    assert "not comparable (profile: smoke ≠ full)" in shown.output and "12 cached" in shown.output
    assert "ours (mean ± std, n)" in shown.output
    assert "results: smoke" in invoke("list").output


def test_run_all_and_seeds_override(toy_env: Path) -> None:
    result = invoke("run", "all", "--seeds", "2", "--quiet")
    assert result.exit_code == 0
    assert json.loads((toy_env / "toy" / "smoke+seeds-2" / "run.json").read_text())["n_trials"] == 8


def test_seeds_and_base_seed_runs_never_replace_the_profiles_own_results(toy_env: Path) -> None:
    """`--seeds`/`--base-seed` runs wrote into the profile's own folder, so `--seeds 3 --profile full` replaced the
    full run the fidelity dashboard reads. They get their own folders; the file's own values name none."""
    assert invoke("run", "toy", "--quiet").exit_code == 0
    before = (toy_env / "toy" / "smoke" / "summary.csv").read_text()
    assert invoke("run", "toy", "--quiet", "--seeds", "2").exit_code == 0
    assert invoke("run", "toy", "--quiet", "--base-seed", "7").exit_code == 0
    assert (toy_env / "toy" / "smoke" / "summary.csv").read_text() == before
    assert sorted(p.name for p in (toy_env / "toy").iterdir()) == ["smoke", "smoke+base-seed-7", "smoke+seeds-2"]
    assert json.loads((toy_env / "toy" / "smoke+base-seed-7" / "run.json").read_text())["base_seed"] == 7
    assert invoke("run", "toy", "--quiet", "--seeds", "3", "--base-seed", "0").exit_code == 0   # the file's own
    assert sorted(p.name for p in (toy_env / "toy").iterdir()) == ["smoke", "smoke+base-seed-7", "smoke+seeds-2"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "tyo"], "unknown experiment id 'tyo'; did you mean 'toy'?"),
        (["run", "toy", "--set", "epsilon=0"], "must be > 0; got 0"),
        (["run", "toy", "--set", "epsilon=-2"], "must be > 0; got -2"),
        (["run", "toy", "--set", "delta=1"], "must lie in (0, 1); got 1"),
        (["run", "toy", "--variant", "reference"], "has no variant 'reference'; valid: paper"),
        (["run", "toy", "--set", "lambda=1"], "has no parameter 'lambda'"),
        (["run", "toy", "--set", "nonsense"], "expects KEY=VALUE"),
        (["plot", "toy"], "run `repro run toy` first"),
        (["report"], "run `repro run toy` first"),
    ],
)
def test_bad_input_gives_one_line_and_nonzero_exit(toy_env: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1
    assert message in result.output
    assert "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_debug_flag_shows_traceback(toy_env: Path) -> None:
    result = CliRunner().invoke(main, ["--debug", "run", "tyo"])
    assert result.exit_code != 0 and result.exception is not None


def test_missing_backend_extra_is_a_clean_error(toy_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_dask(name, *args, **kwargs):
        if name in {"distributed", "ray"} or name.startswith("ray."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_dask)
    for backend, extra in (("dask", "[dask]"), ("ray", "[ray]")):
        result = CliRunner().invoke(main, ["run", "toy", "--backend", backend, "--jobs", "2", "--quiet"])
        assert result.exit_code == 1 and extra in result.output and "pip install" in result.output


def test_plot_and_report_without_results_name_the_run_that_makes_them(toy_env: Path) -> None:
    plotted = invoke("plot", "toy", "--profile", "full", "--set", "x=5")
    assert plotted.exit_code != 0 and "run `repro run toy --profile full --set x=5` first" in plotted.output
    report = invoke("report", "toy")
    assert report.exit_code != 0 and "run `repro run toy` first" in report.output and "ID" not in report.output


def test_plot_and_report_read_saved_results(toy_env: Path) -> None:
    assert invoke("run", "toy", "--quiet").exit_code == 0
    plotted = invoke("plot", "toy")
    assert plotted.exit_code == 0 and "no figures" in plotted.output
    report = invoke("report")
    path = Path(report.output.strip())
    text = path.read_text()
    assert path == toy_env / "REPORT.md"
    assert "## toy (profile smoke" in text and "— Toy experiment" in text
    assert "| a | epsilon=1.0 | value | 1 |" in text


def test_help_documents_every_option(toy_env: Path) -> None:
    text = invoke("run", "--help").output
    for option in ("--profile", "--seeds", "--jobs", "--backend", "--variant", "--out", "--force", "--set"):
        assert option in text
    assert "default: smoke" in text and "default: loky" in text


def test_set_overrides_write_their_own_results_folder(toy_env: Path) -> None:
    assert invoke("run", "toy", "--quiet").exit_code == 0
    before = (toy_env / "toy" / "smoke" / "summary.csv").read_text()
    assert invoke("run", "toy", "--quiet", "--set", "x=5").exit_code == 0
    assert (toy_env / "toy" / "smoke" / "summary.csv").read_text() == before
    (folder,) = [p for p in (toy_env / "toy").iterdir() if p.name.startswith("smoke+set-")]
    assert json.loads((folder / "run.json").read_text())["overrides"] == {"x": [5]}
    assert invoke("plot", "toy", "--set", "x=5").exit_code == 0


def test_missing_data_inside_a_trial_is_one_clean_line(toy_env: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    exp = toy_env.parent / "experiments" / "toy.toml"
    exp.write_text(exp.read_text().replace("x = 1.0\n", 'x = 1.0\nrequire_data = "compas-two-years"\n'))
    monkeypatch.setenv("REPRO_DATA_DIR", str(tmp_path / "empty-cache"))
    monkeypatch.delenv("REPRO_DATA_MIRROR", raising=False)
    monkeypatch.setenv("REPRO_OFFLINE", "1")
    # In-process (--jobs 1): loky reuses worker processes across tests, and those keep the
    # environment they started with, so they would still see the mirror.
    result = CliRunner().invoke(main, ["run", "toy", "--quiet", "--jobs", "1"])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output
    assert lines[0].startswith("repro: error: data file 'compas-scores-two-years.csv'")
    assert "trials of" not in lines[0] and "REPRO_DATA_MIRROR" in lines[0]


def test_user_errors_survive_the_trip_from_a_worker_process() -> None:
    import pickle

    from repro.errors import DataUnavailableError

    err = pickle.loads(pickle.dumps(DataUnavailableError("data file 'x.csv' is unavailable")))
    assert isinstance(err, DataUnavailableError) and str(err) == "data file 'x.csv' is unavailable"


@pytest.mark.parametrize(("args", "message"), [
    (["--set", "epsilon=1,,3"], "empty value"),
    (["--set", "epsilon=1", "--set", "epsilon=3"], "--set epsilon is given twice"),
    (["--set", "epsilon=1,1.0"], "value 1.0 is given twice"),
    (["--set", "method=a,a"], "value a is given twice"),
    (["--set", "epsilon=inf"], "epsilon=inf: not a finite number"),
    (["--set", "epsilon=1e400"], "epsilon=1e400: not a finite number"),
    (["--set", "epsilon=nan"], "not a finite number"),
    (["--out", ""], "is empty"),
])
def test_bad_set_values_are_refused_before_any_trial(toy_env: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, ["run", "toy", "--quiet", *args])
    assert result.exit_code != 0 and message in result.output, result.output
    assert "Traceback" not in result.output and not (toy_env / "toy").exists()


def test_set_epsilon_1_and_1_0_are_one_run(toy_env: Path) -> None:
    assert invoke("run", "toy", "--quiet", "--set", "epsilon=1").exit_code == 0
    (folder,) = [p for p in (toy_env / "toy").iterdir() if p.name.startswith("smoke+set-")]
    first = (folder / "summary.csv").read_bytes()
    again = invoke("run", "toy", "--set", "epsilon=1.0")
    assert again.exit_code == 0 and "(6 cached)" in again.output  # the same trials: every one from the cache
    assert [p.name for p in (toy_env / "toy").iterdir() if p.name.startswith("smoke+set-")] == [folder.name]
    assert (folder / "summary.csv").read_bytes() == first
    assert "1 paper values not comparable (shown as context: profile: smoke ≠ full)" in again.output


def test_paper_values_without_a_tolerance_are_not_called_absent(toy_env: Path) -> None:
    exp = toy_env.parent / "experiments" / "toy.toml"
    exp.write_text(exp.read_text().replace("tolerance = 0.5\n", ""))
    result = invoke("run", "toy", "--profile", "full")
    assert result.exit_code == 0
    assert "no paper values to compare" not in result.output
    assert "1 paper values shown (no tolerance declared" in result.output


def _fig5_and_one_tabular():
    from repro.engine.spec import load_all

    specs = load_all()
    return [specs["dpfermi-fig-5"], specs["dpfermi-fig-2"]]


@pytest.mark.parametrize("visible", [False, True])
def test_run_all_full_takes_the_cpu_profile_only_without_an_accelerator(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], visible: bool) -> None:
    """`repro run all --profile full` on a CPU machine must not start the UTKFace CNN's GPU-days full
    profile (issue 23: "Figure 5 at its cpu profile aside"); named alone, it runs what was asked for."""
    from repro.cli.run import _per_result_configs
    from repro.engine import backends
    from repro.engine.runner import RunConfig

    monkeypatch.setattr(backends, "accelerator_visible", lambda: visible)
    specs, config = _fig5_and_one_tabular(), RunConfig(profile="full")
    as_all = _per_result_configs(specs, config, run_all=True)
    named = _per_result_configs(specs, config, run_all=False)
    assert [c.profile for c in as_all] == (["full", "full"] if visible else ["cpu", "full"])
    assert [c.profile for c in named] == ["full", "full"]
    assert all(c.jobs == config.jobs and c.out == config.out for c in as_all)
    said = capsys.readouterr().err
    assert ("needs an accelerator" in said) is not visible
    smoke = RunConfig(profile="smoke")  # other profiles never ask for the device
    monkeypatch.setattr(backends, "accelerator_visible", lambda: pytest.fail("probed at smoke"))
    assert _per_result_configs(specs, smoke, run_all=True) == [smoke, smoke]


def test_accelerator_probe_reads_the_child_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe asks a child process (the parent must not open the device) and is False without JAX."""
    import importlib.util

    from repro.engine import backends

    monkeypatch.setattr(backends, "_ACCELERATOR_PROBE", "import sys; sys.exit(0)")
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "jax" else real_find_spec(name, *a))
    assert backends.accelerator_visible() is True
    monkeypatch.setattr(backends, "_ACCELERATOR_PROBE", "import sys; sys.exit(1)")
    assert backends.accelerator_visible() is False
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "jax" else real_find_spec(name, *a))
    monkeypatch.setattr(backends, "_ACCELERATOR_PROBE", "import sys; sys.exit(0)")
    assert backends.accelerator_visible() is False
