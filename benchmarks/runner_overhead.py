"""Orchestration cost per trial of the runner, for a trial function that does nothing.

Runs 10,000 trials (one cell x 10,000 repetitions) of ``repro._testing.noop`` with 1 and 2 jobs,
cold (empty cache) and cached, and prints seconds per trial. The pure cost of calling the trial
function is measured separately and subtracted, so "overhead" is what the runner adds: planning,
seeding, cache keys and writes, collection and aggregation.

Targets (issue #2): < 1 ms per trial of in-process overhead; a fully cached rerun of 10,000
trials in < 5 s.

    python benchmarks/runner_overhead.py [--trials 10000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from repro._testing import noop
from repro.engine.runner import RunConfig, run_experiment
from repro.engine.spec import ExperimentSpec, Metric, Profile
from repro.engine.trial import TrialContext


def make_spec(n: int) -> ExperimentSpec:
    return ExperimentSpec(
        id="bench-noop", title="runner overhead", document="-", section="-", spec="-", reproduces="-",
        kind="simulation", trial="repro._testing.noop",
        profiles={"smoke": Profile("smoke", seeds=n), "full": Profile("full", seeds=n)},
        metrics=(Metric("value", "repetition index"),),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10_000)
    args = parser.parse_args()
    n = args.trials
    spec = make_spec(n)

    start = time.perf_counter()
    for rep in range(n):
        noop.run_trial({}, TrialContext("bench-noop", "", "", rep))
    bare = (time.perf_counter() - start) / n

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for jobs in (1, 2):
            out = Path(tmp) / f"jobs{jobs}"
            for phase in ("cold", "cached"):
                start = time.perf_counter()
                outcome = run_experiment(spec, RunConfig(jobs=jobs, out=out))
                wall = time.perf_counter() - start
                assert outcome.n_trials == n and (outcome.n_cached == n) == (phase == "cached")
                rows.append((jobs, phase, wall, wall / n * 1e3, (wall / n - bare) * 1e3))

    print(f"runner overhead, {n} no-op trials (bare trial call: {bare * 1e6:.1f} us)")
    print(f"{'jobs':>4}  {'phase':<6}  {'wall (s)':>9}  {'ms/trial':>9}  {'overhead ms/trial':>17}")
    for jobs, phase, wall, per, over in rows:
        print(f"{jobs:>4}  {phase:<6}  {wall:>9.2f}  {per:>9.3f}  {over:>17.3f}")
    in_process = rows[0][4]
    cached = max(r[2] for r in rows if r[1] == "cached")
    print(f"target: in-process overhead < 1 ms/trial: {in_process:.3f} ms -> "
          f"{'met' if in_process < 1 else 'NOT met'}")
    print(f"target: cached rerun of {n} trials < 5 s: {cached:.2f} s -> {'met' if cached < 5 else 'NOT met'}")


if __name__ == "__main__":
    main()
