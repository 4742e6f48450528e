"""Bounded work: every run's cost is estimated before it starts, checked against the measured full-profile
trial seconds, and refused in one line naming the key that drives it (repro/engine/cost.py)."""

from __future__ import annotations

import csv
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import main
from repro.engine import cost
from repro.engine.runner import RunConfig, plan_estimate, plan_size
from repro.engine.spec import get_experiment, load_all
from repro.errors import InvalidParameterError

ROOT = Path(__file__).parents[2]
TABLE = ROOT / "benchmarks" / "trial_costs.csv"


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REPRO_EXPERIMENTS_DIR", str(ROOT / "experiments"))
    monkeypatch.setenv("REPRO_RESULTS_DIR", str(tmp_path / "results"))
    return tmp_path


def test_every_estimate_is_within_3x_of_the_measured_full_trial_seconds() -> None:
    """The cost table (benchmarks/trial_costs.py): one row per result, the measured seconds of one trial of the
    full profile (cpu where the full one needs an accelerator) beside the model's estimate, made now."""
    rows = {r["result_id"]: r for r in csv.DictReader(TABLE.open(encoding="utf-8"))}
    specs = load_all(ROOT / "experiments")
    assert sorted(rows) == sorted(specs), "benchmarks/trial_costs.csv must have one row per result"
    off = []
    for rid, spec in specs.items():
        row = rows[rid]
        est = cost.profile_estimate(spec, row["profile"])
        estimated = est.core_seconds / est.trials
        measured = float(row["measured_trial_seconds"])
        if float(row["measured_wall_seconds"]) < 1:   # written 0: under a second of wall time
            ok = estimated <= 3 * 1.0 * min(2, est.trials) / est.trials
        else:
            ok = measured / 3 <= estimated <= 3 * measured
        if not ok:
            off.append(f"{rid}: estimated {estimated:.3g} s a trial, measured {measured:.3g} s")
    assert not off, off


def test_a_cost_driving_value_is_refused_naming_the_key() -> None:
    """N3: n_distributions=1e9 was accepted (integer >= 1), then ran 300 s at 4 GB and more."""
    spec = get_experiment("compat-impossibility", ROOT / "experiments")
    start = time.perf_counter()
    with pytest.raises(InvalidParameterError) as caught:
        plan_size(spec, RunConfig(overrides={"n_distributions": ["1e9"]}))
    message = str(caught.value)
    assert time.perf_counter() - start < 5
    assert "n_distributions=1000000000" in message and "above the bound of 24 h" in message
    assert "--allow-large" in message and "\n" not in message
    # the override lifts the bound (nothing is run here)
    est = plan_estimate(spec, RunConfig(overrides={"n_distributions": ["1e9"]}, allow_large=True))
    assert est.core_seconds > cost.MAX_CORE_SECONDS


def test_epochs_at_the_integer_cap_is_refused_by_cost() -> None:
    """N3: epochs was capped only at 2**31 - 1."""
    spec = get_experiment("thesis-table-3.1", ROOT / "experiments")
    with pytest.raises(InvalidParameterError, match=r"driven by epochs=2147483647"):
        plan_size(spec, RunConfig(overrides={"epochs": [str(2**31 - 1)]}))


def test_a_huge_seed_count_is_refused_in_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    """D2: --seeds 66666 (999,990 trials, just under the trial limit) planned for about 10 min and 1 GB."""
    spec = get_experiment("compat-impossibility", ROOT / "experiments")
    start = time.perf_counter()
    with pytest.raises(InvalidParameterError, match=r"driven by --seeds 66,666 \(999,990 trials\)"):
        plan_size(spec, RunConfig(seeds=66666))
    assert time.perf_counter() - start < 30
    # were its trials free, building the plan alone would still keep the first trial waiting past 30 s
    monkeypatch.setattr(cost, "MAX_CORE_SECONDS", float("inf"))
    with pytest.raises(InvalidParameterError, match=r"planning 999,990 trials takes about 1\.67 min .* before the "
                                                    r"first trial starts \(bound: 30 s\); driven by --seeds"):
        plan_size(spec, RunConfig(seeds=66666))


def test_set_values_are_checked_in_linear_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """N14: 500 / 1,000 / 2,000 / 8,000 --set values took 2.3 / 5.5 / 14.9 / > 120 s, because typing and expanding
    them compared every value with every other. Counted, not timed (timings belong to benchmarks/): doubling the
    values at most doubles the comparisons and serialisations the check makes."""
    from repro.engine import cells, schema

    spec = get_experiment("compat-impossibility", ROOT / "experiments")
    counts = {"n": 0}
    for module, name in ((cells, "canonical_json"), (cells, "_same"), (schema, "_same")):
        real = getattr(module, name)

        def counted(*args, _real=real, **kwargs):
            counts["n"] += 1
            return _real(*args, **kwargs)

        monkeypatch.setattr(module, name, counted)

    def work(n: int) -> int:
        counts["n"] = 0
        values = [f"{0.001 + i * 1e-6:.6f}" for i in range(n)]
        try:
            plan_estimate(spec, RunConfig(overrides={"zeta": values}))
        except InvalidParameterError:
            pass
        return counts["n"]

    small, large = work(1_000), work(4_000)
    assert small > 0 and large <= 4.4 * small, f"1,000 values: {small:,} operations; 4,000: {large:,} (not linear)"


def test_run_prints_the_estimate_and_show_prints_it_per_profile(env: Path) -> None:
    result = CliRunner().invoke(main, ["run", "compat-sample-complexity", "--seeds", "1"])
    assert result.exit_code == 0, result.output
    assert "compat-sample-complexity [smoke]: estimated cost: " in result.output
    shown = CliRunner().invoke(main, ["show", "compat-impossibility"])
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.output.split())
    assert text.count("estimated cost: ") == 2 and "of one core for 15 trials" in text


def test_the_cli_refusal_is_one_line_before_any_trial(env: Path) -> None:
    result = CliRunner().invoke(main, ["run", "compat-impossibility", "--set", "n_distributions=1e9", "-q"])
    assert result.exit_code == 1
    (line,) = result.output.strip().splitlines()
    assert line.startswith("repro: error: compat-impossibility: the run is estimated at ") and "n_distributions" in line
    assert not (env / "results").exists() or not any((env / "results").rglob("*.pkl"))


def test_a_profile_s_own_run_is_never_refused_by_the_bound() -> None:
    """DP-FERMI Figure 5's full profile (the paper's run, ~30 h of one core on CPUs) is what its file declares;
    the bound refuses only what --seeds or --set add beyond a declared run."""
    spec = get_experiment("dpfermi-fig-5", ROOT / "experiments")
    own = plan_estimate(spec, RunConfig(profile="full"))
    assert own.core_seconds > cost.MAX_CORE_SECONDS
    with pytest.raises(InvalidParameterError, match="above the bound of 24 h"):
        plan_size(spec, RunConfig(profile="full", seeds=2 * own.seeds))
