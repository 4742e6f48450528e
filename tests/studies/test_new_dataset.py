"""Done-when of issue 36: a new dataset reaches every tabular study by one file plus its experiment's domain.

The toy dataset is one module in a folder on ``$REPRO_DATASET_PATH`` (docs/data.md); the experiments are a
copy of ``experiments/`` whose ``[domains]`` name it (``$REPRO_EXPERIMENTS_DIR``). Nothing else is edited:
no study, no list in code. Each tabular study then runs a smoke trial on it with ``--set dataset=toy``.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

import repro.datasets as datasets_package
from repro.cli import main
from repro.datasets import registry

EXPERIMENTS = Path(__file__).parents[2] / "experiments"

TOY = '''"""A toy tabular dataset: 3,000 rows, two numeric features and one 0/1 feature, A a fair coin."""

import functools

import numpy as np

from repro.datasets.entry import Dataset
from repro.datasets.tabular import TabularDataset


@functools.lru_cache(maxsize=1)
def load_toy() -> TabularDataset:
    rng = np.random.default_rng(0)
    n = 3000
    s = rng.integers(0, 2, n)
    X = np.column_stack([rng.normal(size=n) + 0.5 * s, rng.normal(size=n), rng.integers(0, 2, n)]).astype(float)
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.5, size=n) > 0.25).astype(np.int8)
    return TabularDataset(name="toy", X=X, y=y, s=s.astype(np.int8), feature_names=("a", "b", "c"),
                          numeric_columns=(0, 1), group_names=("g0", "g1"), description="toy", source="none")


DATASET = Dataset(name="toy", loader=load_toy, description="a toy tabular dataset")
'''

#: experiment -> (the file whose [domains] names the datasets, extra --set options for a short smoke run)
RUNS = {
    "thesis-table-3.1": ("_base/thesis-part1.toml", ["--set", "data=clean", "--set", "only_method=DP-FERMI"]),
    "thesis-theorem-8": ("thesis-theorem-8.toml", []),
    "dpfermi-fig-2": ("_base/dpfermi-tabular.toml", ["--set", "data=clean", "--set", "method=dp-fermi",
                                                     "--set", "epsilon=1.0"]),
    "dpfermi-noise-sweep": ("dpfermi-noise-sweep.toml", ["--set", "data=clean"]),
    "thesis-table-5.1": ("_base/thesis-fairprojection.toml", []),
}


def _add_to_domain(path: Path, *, data_clean: bool) -> None:
    """Append "toy" to the file's ``dataset`` domain (and allow ``data = "clean"`` where only authors was)."""
    text = path.read_text(encoding="utf-8")
    new, count = re.subn(r'^dataset = \[(.*)\]$', r'dataset = [\1, "toy"]', text, count=1, flags=re.MULTILINE)
    assert count == 1, f"{path.name} declares no dataset domain"
    if data_clean and not re.search(r"^data = \[", new, flags=re.MULTILINE):
        new = new.replace('dataset = [', 'data = ["authors", "clean"]\ndataset = [', 1)
    path.write_text(new, encoding="utf-8")


@pytest.fixture
def toy_world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data_mirror: Path) -> Path:
    folder = tmp_path / "datasets"
    folder.mkdir()
    (folder / "toy.py").write_text(TOY, encoding="utf-8")                  # the one file
    experiments = tmp_path / "experiments"
    shutil.copytree(EXPERIMENTS, experiments)
    for file, _ in RUNS.values():
        _add_to_domain(experiments / file, data_clean=file == "dpfermi-noise-sweep.toml")
    monkeypatch.setenv(registry.ENV_DATASET_PATH, str(folder))
    monkeypatch.setenv("REPRO_EXPERIMENTS_DIR", str(experiments))
    monkeypatch.setenv("REPRO_DATA_MIRROR", str(data_mirror))
    registry.rescan()
    yield tmp_path
    if str(folder) in datasets_package.__path__:
        datasets_package.__path__.remove(str(folder))
    monkeypatch.delenv(registry.ENV_DATASET_PATH)
    registry.rescan()
    from repro.studies.dpfermi._tabular import load_dataset

    load_dataset.cache_clear()


@pytest.mark.slow
@pytest.mark.data
def test_a_toy_dataset_reaches_every_tabular_study(toy_world: Path) -> None:
    assert registry.get_dataset("toy").kind == "tabular"
    for experiment, (_, extra) in RUNS.items():
        result = CliRunner().invoke(main, ["run", experiment, "--profile", "smoke", "--seeds", "1", "--set",
                                           "dataset=toy", *extra, "--out", str(toy_world / "out"), "-q"])
        assert result.exit_code == 0, f"{experiment}: {result.output}"
        (run_dir,) = (toy_world / "out" / experiment).glob("*/")
        trials = pd.read_csv(run_dir / "trials.csv")
        assert len(trials) > 0, experiment
        fixed = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))["params"].get("dataset")
        used = {fixed} if fixed is not None else set(trials["dataset"].dropna())
        assert used == {"toy"}, experiment


def test_without_the_domain_the_experiment_refuses_the_dataset(tmp_path, monkeypatch) -> None:
    """The domain, not the study, decides: a registered dataset outside the domain is refused by the spec."""
    folder = tmp_path / "datasets"
    folder.mkdir()
    (folder / "toy.py").write_text(TOY, encoding="utf-8")
    monkeypatch.setenv(registry.ENV_DATASET_PATH, str(folder))
    registry.rescan()
    try:
        assert "toy" in registry.dataset_names("tabular")
        result = CliRunner().invoke(main, ["run", "thesis-table-3.1", "--set", "dataset=toy", "--set", "data=clean",
                                           "--out", str(tmp_path / "out"), "-q"])
        assert result.exit_code != 0 and "dataset=toy" in result.output and "not an allowed value" in result.output
    finally:
        datasets_package.__path__.remove(str(folder))
        monkeypatch.delenv(registry.ENV_DATASET_PATH)
        registry.rescan()


def test_every_dataset_a_tabular_domain_names_is_a_tabular_entry() -> None:
    from repro.engine.spec import load_all

    tabular = set(registry.dataset_names("tabular"))
    studies = ("repro.studies.thesis.part1_tables", "repro.studies.thesis.theorem8",
               "repro.studies.dpfermi.tradeoff_figures", "repro.studies.dpfermi.noise_sweep",
               "repro.studies.thesis.fairprojection_tables")
    seen = 0
    for spec in load_all().values():
        if spec.trial in studies:
            assert isinstance(spec.domains.get("dataset"), list), f"{spec.id}: no dataset domain"
            assert set(spec.domains["dataset"]) <= tabular, spec.id
            seen += 1
    assert seen >= 16
