"""Wall time of a real result with the trials handed out in the plan's order and in dispatch order.

The runner used to hand trials to the workers in the plan's order (cell by cell, repetitions inside),
so the second worker took the same cell's repetition 1 and waited on the lock of the cell's shared
value (the DP-FERMI tuning search, computed by its first trial) for 20–60 s per cell. It now hands
out the first trial of every cell first (:func:`repro.engine.runner.dispatch_order`). This script runs
one result both ways, each in a fresh process (its own worker pool: no per-process memo of the other
arm, such as a tuning value, carries over) on an empty cache, and checks that trials.csv is the same
apart from timing.

    REPRO_DATA_MIRROR=../shared/data python benchmarks/dispatch_order.py dpfermi-fig-9 --seeds 3 --jobs 2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from repro.engine import runner
from repro.engine.runner import RunConfig, run_experiment
from repro.engine.spec import get_experiment


def run_arm(args: argparse.Namespace) -> None:
    """One arm in this (fresh) process: its own worker pool, so no per-process cache of the other arm helps."""
    spec = get_experiment(args.experiment)
    overrides = {k: v.split(",") for k, v in (s.split("=", 1) for s in args.sets)}
    if args.arm == "plan":
        runner.dispatch_order = lambda pending: list(pending)
    with tempfile.TemporaryDirectory() as tmp:
        config = RunConfig(profile=args.profile, seeds=args.seeds, jobs=args.jobs, out=Path(tmp), overrides=overrides)
        start = time.perf_counter()
        outcome = run_experiment(spec, config)
        wall = time.perf_counter() - start
    outcome.trials.drop(columns=["seconds", "cached"]).to_csv(args.trials_csv, index=False)
    print(json.dumps({"wall": wall, "trial_seconds": outcome.trial_seconds, "n": outcome.n_trials,
                      "load": os.getloadavg()[0]}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("experiment")
    parser.add_argument("--profile", default="full")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=V[,V...]")
    parser.add_argument("--arm", choices=("plan", "dispatch"), help=argparse.SUPPRESS)
    parser.add_argument("--trials-csv", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.arm:
        run_arm(args)
        return
    print(f"{args.experiment} --profile {args.profile} --seeds {args.seeds} --jobs {args.jobs} {args.sets}; "
          f"load average at start {os.getloadavg()[0]:.2f}")
    tables = []
    with tempfile.TemporaryDirectory() as tmp:
        for arm, name in (("plan", "plan order (before)"), ("dispatch", "dispatch order (after)")):
            csv = Path(tmp) / f"{arm}.csv"
            extra = [a for s in args.sets for a in ("--set", s)]
            seeds = ["--seeds", str(args.seeds)] if args.seeds else []
            out = subprocess.run([sys.executable, __file__, args.experiment, "--profile", args.profile, *seeds,
                                  "--jobs", str(args.jobs), *extra, "--arm", arm, "--trials-csv", str(csv)],
                                 check=True, capture_output=True, text=True).stdout
            r = json.loads(out.strip().splitlines()[-1])
            print(f"  {name:<24} {r['wall']:7.1f} s wall, {r['trial_seconds']:7.1f} trial-seconds, {r['n']} trials; "
                  f"load average now {r['load']:.2f}")
            tables.append(csv.read_text())
    print("  trials.csv identical apart from timing:", tables[0] == tables[1])


if __name__ == "__main__":
    main()
