"""The contract pages are checked against the code (issue 36, "Updated docs").

* ARCHITECTURE.md's ``<!-- contract -->`` block lists every field of :class:`repro.engine.study.Study` and
  :class:`repro.datasets.entry.Dataset`, with its default, and nothing else.
* docs/adding-an-experiment.md's worked example (the blocks marked ``<!-- example: PATH -->``: a toy dataset, a
  toy study and its experiment file) is written, as printed, into a scratch folder that the registry, the
  study package and the experiment folder read, and run from the command line.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

import repro.datasets
import repro.studies
from repro.cli import main
from repro.datasets import registry
from repro.datasets.entry import Dataset
from repro.engine.claims import evaluate_all
from repro.engine.spec import load_experiment
from repro.engine.study import Study

ROOT = Path(__file__).parents[2]
EXAMPLE = re.compile(r"<!-- example: (\S+) -->\n```\w*\n(.*?)```", re.S)


def _contract_calls() -> dict[str, ast.Call]:
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- contract -->\n```python\n(.*?)```", text, re.S)
    assert block, "ARCHITECTURE.md has no <!-- contract --> block"
    tree = ast.parse(block.group(1))
    return {node.value.func.id: node.value for node in tree.body if isinstance(node, ast.Assign)}


@pytest.mark.parametrize("cls", [Study, Dataset])
def test_architecture_lists_every_field_with_its_default(cls: type) -> None:
    call = _contract_calls()[cls.__name__]
    written = {kw.arg: kw.value for kw in call.keywords}
    fields = {f.name: f for f in dataclasses.fields(cls)}
    assert list(written) == list(fields), f"ARCHITECTURE.md's {cls.__name__}(...) fields differ from the code"
    for name, node in written.items():
        f = fields[name]
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            assert isinstance(node, ast.Constant) and node.value is Ellipsis, f"{name} is required: write ..."
        else:
            default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
            assert ast.literal_eval(node) == default, f"{cls.__name__}.{name}: the page's default is not the code's"


def _example_files() -> dict[str, str]:
    text = (ROOT / "docs" / "adding-an-experiment.md").read_text(encoding="utf-8")
    return {path: body for path, body in EXAMPLE.findall(text)}


def test_the_worked_example_has_its_three_files() -> None:
    assert sorted(_example_files()) == ["experiments/mydoc-label-gap.toml", "repro/datasets/coins.py",
                                        "repro/studies/mydoc/label_gap.py"]


def test_the_worked_example_runs_from_its_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = _example_files()
    datasets, studies, experiments = tmp_path / "datasets", tmp_path / "studies", tmp_path / "experiments"
    for folder in (datasets, studies / "mydoc", experiments):
        folder.mkdir(parents=True)
    (datasets / "coins.py").write_text(files["repro/datasets/coins.py"], encoding="utf-8")
    (studies / "mydoc" / "__init__.py").write_text('"""A new document\'s package."""\n', encoding="utf-8")
    (studies / "mydoc" / "label_gap.py").write_text(files["repro/studies/mydoc/label_gap.py"], encoding="utf-8")
    (experiments / "mydoc-label-gap.toml").write_text(files["experiments/mydoc-label-gap.toml"], encoding="utf-8")
    monkeypatch.setenv(registry.ENV_DATASET_PATH, str(datasets))
    monkeypatch.setenv("REPRO_EXPERIMENTS_DIR", str(experiments))
    repro.studies.__path__.append(str(studies))     # in place: the package's spec holds the same list
    registry.rescan()
    try:
        runner = CliRunner()
        shown = runner.invoke(main, ["show", "mydoc-label-gap"])
        assert shown.exit_code == 0, shown.output
        assert "study (repro.studies.mydoc.label_gap, declared by its STUDY)" in shown.output
        out = tmp_path / "results"
        ran = runner.invoke(main, ["run", "mydoc-label-gap", "--profile", "smoke", "--out", str(out), "--no-cache"])
        assert ran.exit_code == 0, ran.output
        summary = pd.read_csv(next(out.rglob("summary.csv")))
        gap = summary[summary["metric"] == "gap"]
        assert gap["mean"].round(10).unique().tolist() == [0.2]      # the dataset's rates are 0.30 and 0.50
        trials = pd.read_csv(next(out.rglob("trials.csv")))
        assert len(trials) == 9 and trials["abs_error"].gt(0).all()
        # the claim is judged on the run's own summary (seeded, so its verdict is fixed: the error falls)
        spec = load_experiment(experiments / "mydoc-label-gap.toml")
        assert evaluate_all(spec.claims, summary) == {"error-falls-with-epsilon": True}
    finally:
        repro.studies.__path__.remove(str(studies))
        if str(datasets) in repro.datasets.__path__:   # the registry put the folder on the package's path
            repro.datasets.__path__.remove(str(datasets))
        for name in [m for m in sys.modules if m.startswith(("repro.studies.mydoc", "repro.datasets.coins"))]:
            del sys.modules[name]
        monkeypatch.undo()
        registry.rescan()


def test_the_worked_example_end_to_end_claim_report_and_dataset_edits(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The worked example, run with its cache: its claim is judged in REPORT.md; run.json names the dataset module
    that ran by its path on $REPRO_DATASET_PATH, with its hash; editing that module recomputes the trials (it is
    part of the trial code), and without the folder the cached trials are not served."""
    files = _example_files()
    datasets, studies, experiments = tmp_path / "datasets", tmp_path / "studies", tmp_path / "experiments"
    for folder in (datasets, studies / "mydoc", experiments):
        folder.mkdir(parents=True)
    coins = datasets / "coins.py"
    coins.write_text(files["repro/datasets/coins.py"], encoding="utf-8")
    (studies / "mydoc" / "__init__.py").write_text('"""A new document\'s package."""\n', encoding="utf-8")
    (studies / "mydoc" / "label_gap.py").write_text(files["repro/studies/mydoc/label_gap.py"], encoding="utf-8")
    (experiments / "mydoc-label-gap.toml").write_text(files["experiments/mydoc-label-gap.toml"], encoding="utf-8")
    monkeypatch.setenv(registry.ENV_DATASET_PATH, str(datasets))
    monkeypatch.setenv("REPRO_EXPERIMENTS_DIR", str(experiments))
    repro.studies.__path__.append(str(studies))
    registry.rescan()
    out = tmp_path / "results"
    run = ["run", "mydoc-label-gap", "--out", str(out)]
    try:
        runner = CliRunner()
        first = runner.invoke(main, run)
        assert first.exit_code == 0 and "9 trials (0 cached)" in first.output, first.output
        assert "9 trials (9 cached)" in runner.invoke(main, run).output
        report = runner.invoke(main, ["report", "--out", str(out)])
        assert report.exit_code == 0, report.output
        text = (out / "REPORT.md").read_text(encoding="utf-8")
        assert "| error-falls-with-epsilon | `decreasing(abs_error)` | holds |" in text
        import json

        entry = json.loads((out / "mydoc-label-gap" / "smoke" / "run.json").read_text())["datasets"]
        assert [(d["dataset"], d["module"]) for d in entry] == [("coins", "$REPRO_DATASET_PATH/coins.py")]
        import hashlib

        assert entry[0]["module_sha256"] == hashlib.sha256(coins.read_bytes()).hexdigest()
        # an edit of the module's code (the rates of group 1 move): every trial is recomputed
        coins.write_text(coins.read_text(encoding="utf-8").replace("30 + 20 * s", "30 + 25 * s"), encoding="utf-8")
        for name in [m for m in sys.modules if m.startswith("repro.datasets.coins")]:
            del sys.modules[name]
        registry.rescan()
        edited = runner.invoke(main, run)
        assert edited.exit_code == 0 and "9 trials (0 cached)" in edited.output, edited.output
        gap = pd.read_csv(out / "mydoc-label-gap" / "smoke" / "summary.csv").query("metric == 'gap'")["mean"]
        assert gap.round(10).unique().tolist() == [0.24]     # group 1's rate is now 0.54 (was 0.50)
        # without the folder the dataset cannot be loaded: no trial of it is served from the cache
        monkeypatch.delenv(registry.ENV_DATASET_PATH)
        repro.datasets.__path__.remove(str(datasets))
        for name in [m for m in sys.modules if m.startswith("repro.datasets.coins")]:
            del sys.modules[name]
        registry.rescan()
        missing = runner.invoke(main, run)
        assert missing.exit_code != 0 and "cached)" not in missing.output
    finally:
        repro.studies.__path__.remove(str(studies))
        if str(datasets) in repro.datasets.__path__:
            repro.datasets.__path__.remove(str(datasets))
        for name in [m for m in sys.modules if m.startswith(("repro.studies.mydoc", "repro.datasets.coins"))]:
            del sys.modules[name]
        monkeypatch.undo()
        registry.rescan()
