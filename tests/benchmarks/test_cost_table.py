"""benchmarks/cost_table.py on fixture run.json files: which runs count, the arithmetic, the markdown."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "cost_table.py"


@pytest.fixture(scope="module")
def cost_table():
    spec = importlib.util.spec_from_file_location("cost_table", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["cost_table"] = module  # dataclasses look their module up while the class is built
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules["cost_table"]
    return module


def write_run(root: Path, rid: str, folder: str, **fields) -> None:
    run = {"result_id": rid, "status": "complete", "profile": "full", "overrides": {}, "jobs": 2,
           "n_trials": 10, "n_cached": 0, "wall_seconds": 100.0, "trial_seconds_total": 190.0,
           "finished_at": "2026-11-25T10:00:00+0000", **fields}
    (root / rid / folder).mkdir(parents=True, exist_ok=True)
    (root / rid / folder / "run.json").write_text(json.dumps(run))


def test_cost_table_from_run_json_files(cost_table, tmp_path: Path, capsys) -> None:
    res = tmp_path / "results"
    write_run(res, "thesis-fig-5.5", "full", wall_seconds=277.5, n_trials=375, trial_seconds_total=540.2)
    write_run(res, "thesis-fig-5.5", "full-old", wall_seconds=999.0, finished_at="2026-11-24T10:00:00+0000")
    write_run(res, "dpfermi-fig-3", "full", wall_seconds=30.0, n_cached=4)
    write_run(res, "new-result", "full", wall_seconds=5.0)
    write_run(res, "thesis-table-5.1", "full", wall_seconds=65.0)
    write_run(res, "bandit-regret", "smoke", profile="smoke")  # other profile: left out
    write_run(res, "bandit-sweep-eps", "full-set", overrides={"seeds": [2]})  # --set: left out
    write_run(res, "compat-fairnr", "full", status="running")  # not complete: left out
    write_run(res / ".cache", "cached-thing", "full")  # the trial cache is not a result
    (res / "broken" / "full").mkdir(parents=True)
    (res / "broken" / "full" / "run.json").write_text("{not json")

    runs = cost_table.read_runs(res, "full")
    assert sorted(runs) == ["dpfermi-fig-3", "new-result", "thesis-fig-5.5", "thesis-table-5.1"]
    assert runs["thesis-fig-5.5"]["wall_seconds"] == 277.5  # the newest run of a result

    previous = cost_table.read_previous()
    assert previous["thesis-fig-5.5"].seconds == 555 and previous["thesis-fig-5.5"].condition == "idle"
    assert previous["thesis-table-5.1"].seconds is None

    exp = tmp_path / "experiments"
    exp.mkdir()
    (exp / "f.toml").write_text('id = "thesis-fig-5.5"\n[profiles.full]\nest_seconds = 120\n')
    cost_table.main([str(res), "--experiments", str(exp)])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| result | wall time |")
    rows = {line.split("|")[1].strip(): line for line in lines[2:]}
    assert rows["`thesis-fig-5.5`"] == ("| `thesis-fig-5.5` | 4 min 38 s | 375 | 2 | 540 | 2 min 00 s | 2.31 "
                                        "| 9 min 15 s (idle) | 0.50× |")
    assert "| 10 (4) |" in rows["`dpfermi-fig-3`"] and "36 s (loaded) | 0.83× |" in rows["`dpfermi-fig-3`"]
    assert rows["`new-result`"].endswith("| — |  | — |  |")
    assert "all four tables 3 min 59 s (idle)" in rows["`thesis-table-5.1`"]
    assert rows["**all 4 results**"].startswith("| **all 4 results** | **6 min 18 s** |")  # 277.5+30+5+65


def test_declared_seconds_come_from_the_experiment_files(cost_table, tmp_path: Path) -> None:
    exp = tmp_path / "experiments"
    exp.mkdir()
    (exp / "a.toml").write_text('id = "a"\naliases = ["a2"]\n[profiles.full]\nest_seconds = 120\n'
                                '[profiles.smoke]\nest_seconds = 4\n')
    (exp / "b.toml").write_text('id = "b"\n[profiles.smoke]\nseeds = 2\n')  # declares nothing
    (exp / "broken.toml").write_text("id = [")
    assert cost_table.read_declared(exp, "full") == {"a": 120.0, "a2": 120.0}
    assert cost_table.read_declared(exp, "smoke") == {"a": 4.0, "a2": 4.0}


def test_declared_seconds_follow_extends(cost_table, tmp_path: Path) -> None:
    """Regression: a result whose file takes its profile from the file it extends (the bandit sweeps) showed
    no declared seconds."""
    exp = tmp_path / "experiments"
    (exp / "_base").mkdir(parents=True)
    (exp / "_base" / "family.toml").write_text('[profiles.full]\nest_seconds = 80\n')
    (exp / "c.toml").write_text('id = "c"\nextends = "_base/family.toml"\n')
    (exp / "d.toml").write_text('id = "d"\nextends = "_base/family.toml"\n[profiles.full]\nest_seconds = 120\n')
    (exp / "e.toml").write_text('id = "e"\nextends = "e.toml"\n')  # a cycle declares nothing
    assert cost_table.read_declared(exp, "full") == {"c": 80.0, "d": 120.0}


def test_cost_table_without_runs_says_what_to_do(cost_table, tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="run `repro run all --profile full` first"):
        cost_table.main([str(tmp_path)])


def test_previous_csv_names_only_registered_results(cost_table) -> None:
    experiments = Path(__file__).resolve().parents[2] / "experiments"
    ids = {p.stem for p in experiments.glob("*.toml")}
    assert set(cost_table.read_previous()) <= ids


def test_only_the_default_variant_counts(cost_table, tmp_path: Path) -> None:
    """Regression: a later `--variant strict` run (its baselines cached) replaced the default run of the same
    result, so the table showed the strict run's 10 min instead of the reference run's 20 min."""
    defaults = cost_table.read_default_variants(SCRIPT.parents[1] / "experiments")
    assert defaults["dpfermi-fig-2"] == "reference"          # declared in the base file it extends
    assert defaults["bandit-groups"] == defaults["bandit-regret"]   # aliases too
    res = tmp_path / "results"
    write_run(res, "dpfermi-fig-2", "full", variant="reference", wall_seconds=1204.0)
    write_run(res, "dpfermi-fig-2", "full-strict", variant="strict", wall_seconds=625.0, n_cached=240,
              finished_at="2026-11-26T10:00:00+0000")
    write_run(res, "h", "full", variant="x", wall_seconds=7.0)   # no variants declared: kept as it is
    runs = cost_table.read_runs(res, "full", defaults)
    assert runs["dpfermi-fig-2"]["wall_seconds"] == 1204.0 and runs["h"]["wall_seconds"] == 7.0


def test_several_folders_and_the_cpu_stand_in(cost_table, tmp_path: Path) -> None:
    """Runs made in two sessions count together (the newest run of a result wins), and a result whose full
    profile needs an accelerator counts with its cpu run, as `repro run all --profile full` runs it here."""
    old, new = tmp_path / "old", tmp_path / "new"
    write_run(old, "dpfermi-fig-2", "full", wall_seconds=1204.0)
    write_run(old, "thesis-fig-5.1", "full", wall_seconds=900.0)
    write_run(new, "thesis-fig-5.1", "full", wall_seconds=715.0, finished_at="2026-11-28T10:00:00+0000")
    write_run(new, "dpfermi-fig-5", "cpu", profile="cpu", wall_seconds=1400.0)
    write_run(new, "dpfermi-fig-2", "cpu", profile="cpu", wall_seconds=1.0)  # offers no cpu profile: ignored
    stand_ins = cost_table.read_cpu_profiles(SCRIPT.parents[1] / "experiments")
    assert stand_ins == {"dpfermi-fig-5"}
    runs = cost_table.read_all_runs([old, new], "full", None, stand_ins)
    assert {rid: r["wall_seconds"] for rid, r in runs.items()} == {
        "dpfermi-fig-2": 1204.0, "thesis-fig-5.1": 715.0, "dpfermi-fig-5": 1400.0}
    assert runs["dpfermi-fig-5"]["stand_in"] == "cpu" and "stand_in" not in runs["thesis-fig-5.1"]
    lines = cost_table.table(runs, {}, {"dpfermi-fig-5@cpu": 1400.0}).splitlines()
    rows = {line.split("|")[1].strip(): line for line in lines[2:]}
    assert rows["`dpfermi-fig-5` (cpu profile)"].startswith("| `dpfermi-fig-5` (cpu profile) | 23 min 20 s |")
    assert "| 1.00 |" in rows["`dpfermi-fig-5` (cpu profile)"]
    assert rows["**all 3 results**"].startswith("| **all 3 results** | **55 min 19 s** |")   # 1204 + 715 + 1400
    assert rows["**without the 1 cpu-profile row**"].startswith(
        "| **without the 1 cpu-profile row** | **31 min 59 s** |")                           # 1204 + 715
    write_run(new, "dpfermi-fig-5", "full", wall_seconds=9000.0)   # a real full run (a GPU machine) wins
    assert "stand_in" not in cost_table.read_all_runs([old, new], "full", None, stand_ins)["dpfermi-fig-5"]


def test_previous_column_from_other_results_folders(cost_table, tmp_path: Path, capsys) -> None:
    """`--previous-results`: each result's own run beside the same result measured in another folder (one
    `repro run all`), the cpu stand-in row compared with the earlier cpu run of the same result."""
    now, before = tmp_path / "all", tmp_path / "own"
    write_run(now, "thesis-fig-5.1", "full", wall_seconds=720.0)
    write_run(now, "dpfermi-fig-5", "cpu", profile="cpu", wall_seconds=800.0)
    write_run(before, "thesis-fig-5.1", "full", wall_seconds=715.0)
    write_run(before, "dpfermi-fig-5", "cpu", profile="cpu", wall_seconds=799.0)
    exp = SCRIPT.parents[1] / "experiments"
    cost_table.main([str(now), "--experiments", str(exp), "--previous-results", str(before),
                     "--previous-label", "own run"])
    rows = {line.split("|")[1].strip(): line for line in capsys.readouterr().out.splitlines()[2:]}
    assert rows["`thesis-fig-5.1`"].endswith("| 11 min 55 s (own run) | 1.01× |")
    assert rows["`dpfermi-fig-5` (cpu profile)"].endswith("| 13 min 19 s (own run) | 1.00× |")
    cost_table.main([str(now), "--experiments", str(exp)])   # the CSV's previous time is not a cpu run
    rows = {line.split("|")[1].strip(): line for line in capsys.readouterr().out.splitlines()[2:]}
    assert "no full run without an accelerator" in rows["`dpfermi-fig-5` (cpu profile)"]
