"""Warnings raised inside trials are counted and summarized once per run (issue #15, item 10)."""

from __future__ import annotations

import logging
import warnings
from dataclasses import replace
from pathlib import Path

import pytest

from repro.engine.runner import RunConfig, run_experiment
from repro.engine.spec import load_experiment
from repro.engine.warnings_capture import capture, summary_lines, template

FIXTURE = Path(__file__).parents[1] / "fixtures" / "experiments" / "toy.toml"


def test_template_groups_messages_that_differ_in_numbers() -> None:
    a = template("failed to converge after 1000 iterations with q=0.512, alpha=1.5")
    b = template("failed to converge after 1000 iterations with q=0.512, alpha=1.9")
    assert a == b == "failed to converge after # iterations with q=#, alpha=#"


def test_capture_counts_absl_records_and_python_warnings_without_printing(capsys) -> None:
    absl = logging.getLogger("absl")
    before = (absl.propagate, list(absl.handlers))
    with capture() as counts:
        for alpha in (1.5, 1.6, 1.7):
            absl.warning("failed to converge with alpha=%s", alpha)
        warnings.warn("something odd 3", RuntimeWarning, stacklevel=1)
    assert counts == {"absl: failed to converge with alpha=#": 3, "RuntimeWarning: something odd #": 1}
    assert (absl.propagate, list(absl.handlers)) == before  # restored
    out = capsys.readouterr()
    assert "converge" not in out.err + out.out


def test_ignored_warnings_stay_ignored() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with capture() as counts:
            warnings.warn("old", DeprecationWarning, stacklevel=1)
    assert not counts


@pytest.mark.parametrize("jobs", [1, 2])
def test_run_summarizes_trial_warnings_once(tmp_path: Path, jobs: int, caplog: pytest.LogCaptureFixture) -> None:
    """The defect: one line per warning per trial (223 for dpfermi-fig-2); now one summary."""
    spec = load_experiment(FIXTURE)
    spec = replace(spec, params={**spec.params, "warn": 5})
    with caplog.at_level(logging.WARNING):
        outcome = run_experiment(spec, RunConfig(out=tmp_path, jobs=jobs, use_cache=False))
    assert outcome.warnings == {"absl: toy accountant failed to converge at alpha=#": 5 * 12}
    converge = [r for r in caplog.records if "converge" in r.getMessage()]
    assert len(converge) == 1 and converge[0].name == "repro.engine.runner"
    assert "60 x absl" in converge[0].getMessage() and "in 12 trial(s)" in converge[0].getMessage()


def test_summary_lines_cap_the_number_of_kinds() -> None:
    counts = {f"k{i}": 1 for i in range(8)}
    lines = summary_lines(counts, dict.fromkeys(counts, 1), "x", limit=3)
    assert len(lines) == 1 + 3 + 1 and "5 more of 5 other kind(s)" in lines[-1]
