"""The README tells a newcomer what the headline run is expected to show (issue #15, item 12)."""

from __future__ import annotations

import re
from pathlib import Path

from repro.engine.runner import RunConfig, run_experiment
from repro.engine.spec import load_experiment

ROOT = Path(__file__).parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_says_which_headline_rows_fail_by_design() -> None:
    headline = README.split("<!-- headline-command -->", 1)[1].split("<!-- test-command -->", 1)[0]
    assert "Expect 12 `NO` rows" in headline and "erratum E-4" in headline


def test_readme_mirror_example_is_an_absolute_path() -> None:
    examples = re.findall(r"REPRO_DATA_MIRROR=(\S+?)`", README)
    assert examples and all(e.startswith("/") for e in examples)


def test_headline_experiment_explains_its_expected_failures_and_names_methods(tmp_path: Path) -> None:
    spec = load_experiment(ROOT / "experiments" / "compat-impossibility.toml")
    assert "erratum E-4" in spec.expected
    outcome = run_experiment(spec, RunConfig(out=tmp_path, use_cache=False))
    assert outcome.summary["method"].astype(str).str.len().min() > 0  # no empty method column
    not_within = outcome.summary["within"].eq(False).sum()
    assert str(int(not_within)) in spec.expected  # the count the line promises is the count we get
