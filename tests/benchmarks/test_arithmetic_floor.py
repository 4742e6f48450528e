"""benchmarks/arithmetic_floor.py on fixture results: which DP-FERMI programs a result ran (nothing is timed)."""

from __future__ import annotations

import csv
import importlib.util
import json
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "arithmetic_floor.py"


@pytest.fixture(scope="module")
def floor():
    spec = importlib.util.spec_from_file_location("arithmetic_floor", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["arithmetic_floor"] = module
    sys.path.insert(0, str(SCRIPT.parent))  # its sibling scripts, as when it runs from benchmarks/
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules["arithmetic_floor"]
        sys.path.remove(str(SCRIPT.parent))
    return module


def _write(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def test_a_figure_counts_its_trials_models_and_tuning_passes(floor, tmp_path: Path) -> None:
    folder = tmp_path / "dpfermi-fig-2" / "full"
    params = {"batch_size": 1024, "epochs": 200, "dataset": "adult", "tune_validation_fraction": 0.2,
              "tune_seeds": 3}
    trials, privacy, tuning = [], [], []
    for data, n, steps in (("authors", 45243, 9000), ("clean", 33916, 6800)):
        for rep in range(2):
            setting = f"data={data};epsilon=1.0"
            privacy += [{"method": "dp-fermi", "setting": setting, "repetition": rep, "data": data, "n_train": n,
                         "steps": steps, "hyper": h} for h in ("tuned", "fixed")]
            trials += [{"method": "dp-fermi", "setting": f"{setting};hyper={h};knob={k}", "repetition": rep,
                        "seconds": 5.0} for h in ("tuned", "fixed") for k in (0.0, 0.5, 1.0)]
            trials.append({"method": "pf-ld", "setting": setting, "repetition": rep, "seconds": 1.0})
        tuning += [{"data": data, "epsilon": 1.0, "hyper": "tuned", "clip_L": c} for c in range(4)]
    _write(folder / "trials.csv", trials)
    _write(folder / "tables" / "privacy.csv", privacy)
    _write(folder / "tables" / "tuning.csv", tuning)
    (folder / "run.json").write_text(json.dumps({"result_id": "dpfermi-fig-2", "params": params}))
    progs, _ = floor.programs(folder, {})
    # 2 repetitions of 6 private models and the non-private one; 3 seeds of the 4-point tuning search on the
    # training rows less the validation fifth (epochs × batches of 1,024)
    assert sorted(progs) == [("adult", "authors", 36194, 4, 200 * 36, 3), ("adult", "authors", 45243, 7, 9000, 2),
                             ("adult", "clean", 27133, 4, 200 * 27, 3), ("adult", "clean", 33916, 7, 6800, 2)]


def test_the_noise_sweep_counts_its_grid_as_one_trial(floor, tmp_path: Path) -> None:
    folder = tmp_path / "dpfermi-noise-sweep" / "full"
    trials = [{"method": "dp-fermi", "dataset": "parkinsons", "repetition": rep,
               "setting": f"clip_L={c};dataset=parkinsons;epsilon=1.0;fairness=dp;knob={k};lr_theta=0.005;"
                          f"radius_D={c}", "seconds": 2.0}
              for rep in range(3) for c in (1.0, 5.0) for k in (0.0, 0.5)]
    _write(folder / "trials.csv", trials)
    (folder / "run.json").write_text(json.dumps({"result_id": "dpfermi-noise-sweep", "params": {
        "batch_size": 1024, "epochs": 200, "data": "authors"}}))
    progs, _ = floor.programs(folder, {"parkinsons": 4406})
    assert progs == [("parkinsons", "authors", 4406, 4, 200 * 5, 3)]
