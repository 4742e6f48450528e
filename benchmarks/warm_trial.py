"""Wall seconds of one planned trial, warm, repeated: the median of ``--repeat`` runs in this process.

Plans the experiment as ``repro run`` does, picks the first trial whose cell matches every
``--cell KEY=VALUE`` (repetition ``--rep``), pinned to one thread as the runner pins its workers
(``single_threaded``). One run fills the per-process caches (data, tuning, noise calibration), then
``--repeat`` runs are timed. No trial cache is read or written. Run it from two checkouts (``PYTHONPATH``)
for a before/after ratio; ``--digest`` prints a hash of the trial's records, so the two checkouts can be
shown to give the same bytes.

    REPRO_DATA_MIRROR=../shared/data python benchmarks/warm_trial.py dpfermi-fig-2 \\
        --cell method=dp-fermi --cell epsilon=1.0 --cell data=authors --repeat 5 --digest
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import statistics
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("experiment")
    parser.add_argument("--profile", default="full")
    parser.add_argument("--cell", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--rep", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--digest", action="store_true", help="print a sha256 of the trial's records")
    args = parser.parse_args()

    from repro.engine.backends import single_threaded
    from repro.engine.runner import RunConfig, plan_trials
    from repro.engine.spec import get_experiment

    spec = get_experiment(args.experiment)
    tasks = plan_trials(spec, RunConfig(profile=args.profile, use_cache=False))
    wanted = dict(c.split("=", 1) for c in args.cell)
    matches = [t for t in tasks if t.context.repetition == args.rep
               and all(str(t.cell.get(k)) == v for k, v in wanted.items())]
    if not matches:
        raise SystemExit(f"no trial of {args.experiment} [{args.profile}] matches {wanted} at repetition {args.rep}")
    task = matches[0]
    module = importlib.import_module(task.module)
    times = []
    with single_threaded():
        out = module.run_trial(dict(task.params), task.context)
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            module.run_trial(dict(task.params), task.context)
            times.append(time.perf_counter() - t0)
    line = (f"{args.experiment} {task.cell} rep {args.rep}: median {statistics.median(times):.3f} s "
            f"(min {min(times):.3f}, {args.repeat} warm runs; load {os.getloadavg()[0]:.1f})")
    if args.digest:
        records = getattr(out, "records", out)
        blob = json.dumps(records, sort_keys=True, default=repr).encode()
        line += f" records sha256 {hashlib.sha256(blob).hexdigest()[:16]}"
    print(line)


if __name__ == "__main__":
    main()
