"""Wall seconds of one planned trial, warm, repeated: the median of ``--repeat`` runs in this process.

Plans the experiment as ``repro run`` does, picks the first trial whose cell matches every
``--cell KEY=VALUE`` (repetition ``--rep``), pinned to one thread as the runner pins its workers
(``single_threaded``; the trial is chosen as ``profile_trial.py`` chooses it). One run fills the per-process caches (data, tuning, noise calibration), then
``--repeat`` runs are timed. No trial cache is read or written. Run it from two checkouts (``PYTHONPATH``)
for a before/after ratio; ``--digest`` prints a hash of the trial's records, so the two checkouts can be
shown to give the same bytes.

    REPRO_DATA_MIRROR=../shared/data python benchmarks/warm_trial.py dpfermi-fig-2 \\
        --cell method=dp-fermi --cell epsilon=1.0 --cell data=authors --repeat 5 --digest
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import time

from profile_trial import add_trial_arguments, planned_trial  # this folder's sibling script


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_trial_arguments(parser)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--digest", action="store_true", help="print a sha256 of the trial's records")
    args = parser.parse_args()

    from repro.engine.backends import single_threaded

    task, module, _ = planned_trial(args)
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
