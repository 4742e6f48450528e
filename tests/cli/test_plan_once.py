"""`repro run` plans each result once and passes the plan down: the trial count (with the cost estimate) and the
`--set` typing run once per command (they ran three times before)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import main
from repro.engine import runner
from repro.engine.spec import ExperimentSpec


def test_plan_size_and_the_set_coercion_run_once_per_command(toy_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {"plan_size": 0, "coerce": 0, "plan": 0}
    size, coerce, plan = runner.plan_estimate, ExperimentSpec.coerce, runner.build_plan

    def counted_size(*args, **kwargs):
        calls["plan_size"] += 1
        return size(*args, **kwargs)

    def counted_coerce(self, *args, **kwargs):
        calls["coerce"] += 1
        return coerce(self, *args, **kwargs)

    def counted_plan(*args, **kwargs):
        calls["plan"] += 1
        return plan(*args, **kwargs)

    monkeypatch.setattr(runner, "plan_estimate", counted_size)   # plan_size is its (trials, cells, seeds)
    monkeypatch.setattr("repro.cli.run.plan_estimate", counted_size)
    monkeypatch.setattr(runner, "build_plan", counted_plan)
    monkeypatch.setattr("repro.cli.run.build_plan", counted_plan)
    monkeypatch.setattr(ExperimentSpec, "coerce", counted_coerce)
    result = CliRunner().invoke(main, ["run", "toy", "--set", "epsilon=1", "--quiet"])
    assert result.exit_code == 0, result.output
    assert calls == {"plan_size": 1, "coerce": 1, "plan": 1}
