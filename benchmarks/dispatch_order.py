"""Wall time of a real result with the trials handed out in the plan's order and in dispatch order.

The runner used to hand trials to the workers in the plan's order (cell by cell, repetitions inside),
so the second worker took the same cell's repetition 1 and waited on the lock of the cell's shared
value (the DP-FERMI tuning search, computed by its first trial) for 20–60 s per cell. It now hands
out the first trial of every cell first (:func:`repro.engine.runner.dispatch_order`). This script runs
one result both ways on an empty cache each and checks that trials.csv is the same apart from timing.

    REPRO_DATA_MIRROR=../shared/data python benchmarks/dispatch_order.py dpfermi-fig-9 --seeds 3 --jobs 2
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from repro.engine import runner
from repro.engine.runner import RunConfig, run_experiment
from repro.engine.spec import get_experiment


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("experiment")
    parser.add_argument("--profile", default="full")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=V[,V...]")
    args = parser.parse_args()
    spec = get_experiment(args.experiment)
    overrides = {k: v.split(",") for k, v in (s.split("=", 1) for s in args.sets)}
    dispatch = runner.dispatch_order
    print(f"{spec.id} --profile {args.profile} --seeds {args.seeds} --jobs {args.jobs} {args.sets}; "
          f"load average at start {os.getloadavg()[0]:.2f}")
    trials = {}
    for name, order in (("plan order (before)", lambda pending: list(pending)), ("dispatch order (after)", dispatch)):
        runner.dispatch_order = order
        with tempfile.TemporaryDirectory() as tmp:
            config = RunConfig(profile=args.profile, seeds=args.seeds, jobs=args.jobs, out=Path(tmp),
                               overrides=overrides)
            start = time.perf_counter()
            outcome = run_experiment(spec, config)
            wall = time.perf_counter() - start
        trials[name] = outcome.trials.drop(columns=["seconds", "cached"])
        print(f"  {name:<24} {wall:7.1f} s wall, {outcome.trial_seconds:7.1f} trial-seconds, "
              f"{outcome.n_trials} trials; load average now {os.getloadavg()[0]:.2f}")
    runner.dispatch_order = dispatch
    before, after = trials.values()
    print("  trials.csv identical apart from timing:", before.equals(after))


if __name__ == "__main__":
    main()
