"""REPORT.md and `repro run`'s table read the summary's `comparable` column (one rule), and results saved before
it existed keep their old reading (smoke verdicts hidden)."""

from __future__ import annotations

import pandas as pd

from repro.engine.report import comparison_rows
from repro.engine.results import verdict_line


def _summary(**extra) -> pd.DataFrame:
    row = {"result_id": "x", "method": "a", "setting": "", "metric": "m", "n": 2, "mean": 0.5, "std": 0.1,
           "paper": 0.7, "diff": None, "tolerance": None, "within": None, "paper_source": "p"}
    return pd.DataFrame([{**row, **extra}])


def test_a_context_row_says_not_comparable_with_its_reason_and_no_diff() -> None:
    summary = _summary(comparable=False, condition="epochs: 5 ≠ 200")
    (row,) = comparison_rows(summary)
    assert row[-1] == "not comparable (epochs: 5 ≠ 200)" and row[5] == "" and row[6] == ""
    assert verdict_line(summary) == "1 paper values not comparable (shown as context: epochs: 5 ≠ 200)"


def test_a_comparable_row_is_judged() -> None:
    summary = _summary(comparable=True, condition=None, diff=-0.2, tolerance=0.01, within=False)
    (row,) = comparison_rows(summary)
    assert row[-1] == "NO" and row[5] == "-0.2"
    assert verdict_line(summary) == "0 of 1 paper comparisons within tolerance"


def test_a_summary_saved_before_the_column_keeps_the_old_reading() -> None:
    summary = _summary(diff=-0.2, tolerance=0.01, within=False)   # no comparable column
    assert comparison_rows(summary, verdicts=False)[0][-1] == "n/a"
    assert verdict_line(summary, hidden=True).startswith("not judged: smoke profile (1 paper values")
