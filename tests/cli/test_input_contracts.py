"""Issue #35: every input is checked against a declared contract before work starts.

Each probe of the issue's audit is refused in one line, before any trial runs (no trial runs means: the trial
cache stays empty and no results folder is written), or has its declared effect.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import main
from repro.engine.runner import MAX_TRIALS
from repro.engine.spec import load_experiment

ROOT = Path(__file__).resolve().parents[2]


def refused(tmp_path: Path, *args: str) -> str:
    """Run ``repro run ARGS --out tmp_path``; assert a one-line refusal and that nothing ran; return the line."""
    result = CliRunner().invoke(main, ["run", *args, "--quiet", "--out", str(tmp_path)], catch_exceptions=True)
    assert result.exit_code == 1, (args, result.output, result.exception)
    assert not isinstance(result.exception, SystemExit) or result.exception.code == 1
    lines = [line for line in result.output.splitlines() if line.startswith("repro: error:")]
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    assert not (tmp_path / ".cache").exists() or not any((tmp_path / ".cache").rglob("*.pkl")), "a trial ran"
    return lines[0]


def test_only_method_takes_the_results_method_names(tmp_path: Path) -> None:
    line = refused(tmp_path, "thesis-table-3.1", "--set", "only_method=nope")
    assert "only_method=nope" in line and "DP-FERMI (strict)" in line


def test_only_method_of_a_method_missing_from_the_profile_is_refused() -> None:
    from repro.studies.thesis.part1_tables_checks import check_plan

    with pytest.raises(Exception, match="no cell of this run has that method"):
        check_plan({"only_method": "DP-FERMI", "subsample": 0}, [{"method": "Algorithm 2"}])


@pytest.mark.parametrize("seeds", ["1000000", "99999999999999999999"])
def test_a_plan_too_large_to_hold_is_refused_with_its_count_and_the_limit(tmp_path: Path, seeds: str) -> None:
    line = refused(tmp_path, "compat-impossibility", "--seeds", seeds)
    assert "trials" in line and f"{MAX_TRIALS:,}" in line and "15 cells" in line


@pytest.mark.parametrize(("args", "needle"), [
    (("bandit-regret", "--set", "epsilon=1e-300"), "epsilon=1e-300"),
    (("bandit-regret", "--set", "T=99999999999999999999"), "T=99999999999999999999"),
    (("bandit-regret", "--set", "T=2"), "T=2"),
    (("thesis-table-3.1", "--set", "subsample=1"), "subsample=1"),
    (("bandit-regret", "--set", "env=acs", "--set", "acs_states=ZZ"), "acs_states=ZZ"),
    (("bandit-regret", "--set", "env=acs", "--set", "acs_dir=/nonexistent-folder"), "acs_dir=/nonexistent-folder"),
])
def test_values_that_failed_inside_the_trials_are_refused_naming_the_key(tmp_path: Path, args, needle: str) -> None:
    assert needle in refused(tmp_path, *args)


def test_a_key_without_effect_warns_and_makes_no_folder(tmp_path: Path, caplog) -> None:
    """`--set acs_dir=...` under the synthetic environment (smoke) changes nothing: a warning, the profile's folder."""
    with caplog.at_level(logging.WARNING):
        result = CliRunner().invoke(main, ["run", "bandit-regret", "--quiet", "--out", str(tmp_path), "--set",
                                           "acs_dir=/nonexistent-folder", "--set", "T=3"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "acs_dir has no effect" in caplog.text
    folders = sorted(p.name for p in (tmp_path / "bandit-regret").iterdir() if not p.name.startswith("."))
    plain = sorted(p.name for p in (tmp_path / "bandit-regret").iterdir() if p.name.startswith("smoke+set-"))
    assert len(plain) == 1 and folders == plain   # only T=3 names the folder, not acs_dir
    import json
    run = json.loads((tmp_path / "bandit-regret" / plain[0] / "run.json").read_text())
    assert set(run["overrides"]) == {"T"}
    # `repro plot` with the same flags finds that folder
    plot = CliRunner().invoke(main, ["plot", "bandit-regret", "--out", str(tmp_path), "--set", "acs_dir=/nonexistent-folder",
                                     "--set", "T=3"], catch_exceptions=False)
    assert plot.exit_code == 0, plot.output


def test_grid_values_outside_the_files_own_domains_fail_at_load(tmp_path: Path) -> None:
    text = (ROOT / "experiments" / "compat-impossibility.toml").read_text()
    assert 'zeta = ["1/100", "1/10", "3/16"]' in text
    path = tmp_path / "compat-impossibility.toml"
    path.write_text(text.replace('zeta = ["1/100", "1/10", "3/16"]', 'zeta = ["1/100", "1/2", "3/16"]'))
    with pytest.raises(Exception, match=r"grid\.zeta.*1/2.*\[domains\]"):
        load_experiment(path)


def test_the_any_domain_is_refused_by_the_loader(tmp_path: Path) -> None:
    text = (ROOT / "tests" / "fixtures" / "experiments" / "toy.toml").read_text()
    path = tmp_path / "toy.toml"
    path.write_text(text.replace("[params]\n", '[domains]\nfoo = "any"\n\n[params]\n', 1))
    with pytest.raises(Exception, match='no "any value" domain'):
        load_experiment(path)


def test_repro_show_has_no_any_value_domain() -> None:
    from repro.engine.spec import load_all

    runner = CliRunner()
    for experiment_id in load_all(ROOT / "experiments", strict=True):
        result = runner.invoke(main, ["show", experiment_id], catch_exceptions=False)
        assert result.exit_code == 0, (experiment_id, result.output)
        assert "any value" not in result.output and "(values as declared)" not in result.output, experiment_id


# ---------------------------------------------------------------- the low items of issue #35


def test_an_id_in_another_case_is_suggested(toy_env: Path) -> None:
    result = CliRunner().invoke(main, ["run", "TOY"])
    assert result.exit_code == 1 and "did you mean 'toy'?" in result.output, result.output


def test_debug_is_accepted_after_run_too(toy_env: Path) -> None:
    result = CliRunner().invoke(main, ["run", "toy", "--debug", "--set", "nope=1"])
    assert result.exit_code != 0 and "No such option" not in result.output
    assert "has no parameter 'nope'" in str(result.exception)   # --debug: the error is raised, not one line


def test_plot_checks_set_keys(toy_env: Path) -> None:
    result = CliRunner().invoke(main, ["plot", "toy", "--set", "nope=1"])
    assert result.exit_code == 1 and "has no parameter 'nope'" in result.output, result.output


def test_an_empty_experiments_folder_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPRO_EXPERIMENTS_DIR", str(tmp_path))
    result = CliRunner().invoke(main, ["list"])
    assert result.exit_code == 1 and "holds no experiment files" in result.output, result.output


def test_a_mirror_path_that_is_a_file_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mirror").write_text("not a folder")
    monkeypatch.setenv("REPRO_DATA_MIRROR", str(tmp_path / "mirror"))
    monkeypatch.setenv("REPRO_DATA_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("REPRO_OFFLINE", "1")
    result = CliRunner().invoke(main, ["data", "path", "adult-data"])
    assert result.exit_code == 1 and "is a file, not a folder" in result.output, result.output
    assert "does not exist" not in result.output


def test_run_folders_run_json_and_report_honour_the_umask(toy_env: Path) -> None:
    import os

    old = os.umask(0o022)
    try:
        assert CliRunner().invoke(main, ["run", "toy", "--quiet"]).exit_code == 0
        assert CliRunner().invoke(main, ["report"]).exit_code == 0
    finally:
        os.umask(old)
    folder = toy_env / "toy" / "smoke"
    assert folder.stat().st_mode & 0o777 == 0o755
    assert (folder / "run.json").stat().st_mode & 0o777 == 0o644
    assert (toy_env / "REPORT.md").stat().st_mode & 0o777 == 0o644


def test_report_labels_tell_runs_with_different_methods_apart(tmp_path: Path) -> None:
    import pandas as pd

    from repro.engine.report import run_label
    from repro.engine.results import ResultBundle

    spec = load_experiment(ROOT / "tests" / "fixtures" / "experiments" / "toy.toml")
    base = {"profile": "smoke", "variant": "paper", "overrides": {}}
    runs = [{**base, "with": [{"method": "A (yours)", "reference": "a.py:A", "sha256": "1" * 64}]},
            {**base, "with": [{"method": "A (yours)", "reference": "a.py:A", "sha256": "2" * 64}]},
            {**base, "with": [{"method": "B (yours)", "reference": "b.py:B", "sha256": "1" * 64}]}]
    labels = {run_label(ResultBundle(spec, tmp_path / f"smoke+with-{i}", pd.DataFrame(), pd.DataFrame(), run))
              for i, run in enumerate(runs)}
    assert len(labels) == 3 and all("--with" in label for label in labels), labels
    old = ResultBundle(spec, tmp_path / "smoke+with-abcd1234", pd.DataFrame(), pd.DataFrame(), base)
    assert "abcd1234" in run_label(old)   # a run.json written before the methods were recorded


def test_thesis_keys_without_effect_under_the_variant_or_cells_are_named() -> None:
    from repro.studies.thesis.part1_tables_checks import check_plan

    cells = [{"method": "Algorithm 2"}, {"method": "DP-FERMI", "lambda": 0.5}]
    inert = check_plan({"only_method": "", "variant": "calibrated"}, cells)
    assert set(inert) == {"thesis_sigma", "strict_clip_norm"}
    assert "thesis_sigma" not in check_plan({"only_method": "", "variant": "thesis-sigma"}, cells)
