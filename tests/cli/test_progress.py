"""ETA arithmetic of `repro run all` (repro/cli/progress.py) and its display through the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import main
from repro.cli.progress import (
    DEFAULT_EST_SECONDS,
    ResultTiming,
    RunProgress,
    closing_line,
    declared_seconds,
    format_duration,
    status_line,
)


def three() -> RunProgress:
    return RunProgress([ResultTiming("a", 100.0), ResultTiming("b", 200.0), ResultTiming("c", 300.0)])


def test_declared_seconds_scale_with_seeds() -> None:
    assert declared_seconds(120, None, 20) == 120
    assert declared_seconds(120, 5, 20) == 30
    assert declared_seconds(None, None, 3) == DEFAULT_EST_SECONDS


def test_eta_before_anything_is_the_declared_total() -> None:
    p = three()
    assert p.start(0, 0.0) == 600.0
    assert p.correction() == 1.0 and p.n_done == 0 and p.n_left == 3


def test_eta_is_corrected_by_measured_over_declared() -> None:
    p = three()
    p.start(0, 0.0)
    p.finish(0, 150.0)  # 1.5 x slower than declared
    assert p.correction() == pytest.approx(1.5)
    assert p.start(1, 150.0) == pytest.approx((200 + 300) * 1.5)
    p.finish(1, 100.0)  # now (150 + 100) / (100 + 200)
    assert p.correction() == pytest.approx(250 / 300)
    assert p.start(2, 250.0) == pytest.approx(300 * 250 / 300)
    p.finish(2, 310.0)
    assert p.n_left == 0 and p.eta() == 0.0


def test_cached_results_do_not_bend_the_correction() -> None:
    p = three()
    p.start(0, 0.0)
    p.finish(0, 0.2, cached_only=True)
    assert p.correction() == 1.0
    assert p.start(1, 0.2) == pytest.approx(500.0)


def test_eta_inside_a_result() -> None:
    p = three()
    p.start(0, 0.0)
    # declared-only while no trial has been computed: 100 - 30 s elapsed, plus 500 after it
    assert p.eta(elapsed_current=30.0) == pytest.approx(70.0 + 500.0)
    assert p.eta(elapsed_current=130.0) == pytest.approx(0.0 + 500.0)  # overdue: never negative
    # 10 of 40 trials done, 4 of them cached: 6 computed in 30 s -> 30 left take 150 s
    assert p.eta(elapsed_current=30.0, trials_done=10, trials_cached=4, trials_total=40) == pytest.approx(650.0)


def test_closing_line_compares_the_predictions_with_the_real_time() -> None:
    p = three()
    p.start(0, 0.0)  # predicted 600
    p.finish(0, 200.0)
    p.start(1, 200.0)  # predicted 200 + 500 * 2 = 1200
    p.finish(1, 400.0)
    p.start(2, 600.0)
    p.finish(2, 600.0)
    line = closing_line(p, 1200.0)
    assert "3 results in 20 min 00 s" in line
    assert "predicted at the start (the files' est_seconds): 10 min 00 s (-50%)" in line
    assert "after the first result: 20 min 00 s (+0%)" in line
    assert status_line(p, 0.0).startswith("3/3 results done, 0 left, ETA 0 s")


@pytest.mark.parametrize(("seconds", "text"), [(0, "0 s"), (59.4, "59 s"), (65, "1 min 05 s"),
                                                (3725, "1 h 02 min"), (-3, "0 s")])
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


def test_run_of_several_results_shows_done_left_and_the_closing_check(toy_env: Path) -> None:
    exp = toy_env.parent / "experiments"
    text = (exp / "toy.toml").read_text()
    (exp / "toy2.toml").write_text(text.replace('id = "toy"', 'id = "toy2"', 1))
    result = CliRunner().invoke(main, ["run", "toy", "toy2"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    err = result.stderr
    assert "[1/2] toy: 0/2 results done, 2 left, ETA" in err
    assert "[2/2] toy2: 1/2 results done, 1 left, ETA" in err
    assert "2 results in" in err and "predicted at the start" in err
    single = CliRunner().invoke(main, ["run", "toy"], catch_exceptions=False)
    assert "results done" not in single.output  # one result: no run-wide display
