"""The cost table: per result, the measured seconds of one full-profile trial beside the cost model's estimate.

Measured: ``run_all_2026-11-28.csv``, the wall seconds of each result in ``repro run all --profile full --jobs 2``
on the idle 2-core machine (2026-11-28, numpy engines; DP-FERMI Figure 5 at its ``cpu`` profile, as ``all``
runs it without an accelerator; a wall time under 1 s is written 0). One trial's core-seconds are
``wall × min(2, trials) / trials``: both cores busy, except in a run of one trial. Estimated:
:func:`repro.engine.cost.profile_estimate` (the file's ``est_seconds`` and ``[cost]``). Writes
``trial_costs.csv`` beside this script, which ``tests/core/test_cost.py`` reads.

    python benchmarks/trial_costs.py
"""

from __future__ import annotations

import csv
from pathlib import Path

from repro.engine import cost
from repro.engine.spec import load_all

HERE = Path(__file__).parent
MEASURED = HERE / "run_all_2026-11-28.csv"
OUT = HERE / "trial_costs.csv"
FIELDS = ["result_id", "profile", "trials", "measured_wall_seconds", "measured_trial_seconds",
          "estimated_trial_seconds", "ratio", "source"]


def rows() -> list[dict[str, object]]:
    measured = {r["result_id"]: r for r in csv.DictReader(MEASURED.open(encoding="utf-8"))}
    out = []
    for rid, spec in sorted(load_all().items()):
        profile = "cpu" if "cpu" in spec.profiles else "full"
        est = cost.profile_estimate(spec, profile)
        wall = float(measured[rid]["previous_seconds"])
        trial = wall * min(cost.MEASURED_JOBS, est.trials) / est.trials
        estimated = est.core_seconds / est.trials
        out.append({"result_id": rid, "profile": profile, "trials": est.trials, "measured_wall_seconds": wall,
                    "measured_trial_seconds": f"{trial:.4g}", "estimated_trial_seconds": f"{estimated:.4g}",
                    "ratio": f"{estimated / trial:.2f}" if trial else "",
                    "source": "repro run all --profile full --jobs 2, idle, 2026-11-28"})
    return out


if __name__ == "__main__":
    table = rows()
    with OUT.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, FIELDS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(table)
    for row in table:
        print(f"{row['result_id']:28s} {row['measured_trial_seconds']:>8s} {row['estimated_trial_seconds']:>8s} "
              f"{row['ratio']}")
