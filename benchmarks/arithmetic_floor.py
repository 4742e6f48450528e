"""The arithmetic floor of the tabular DP-FERMI results on this machine (issue 34's ≤ 12 min target).

Every step of a DP-FERMI trial's program multiplies its batch rows by the models twice: the logits X_B·Θ
((B × d)·(d × G), G models) and the gradient X_Bᵀ·R. This script times only those two products, compiled as
the unit compiles them (XLA on one thread, ``lax.scan`` over steps), for every distinct (rows, d, G) of the
DP-FERMI trials and tuning searches that a results folder ran, and sums steps × seconds per step over them:

- ``products`` — the two products of a fixed batch (float64, what the project runs): no program that computes
  these trials' models in float64 with dense products can take less;
- ``+ gather`` — the same with each step's batch rows gathered from the training rows (float64 rows);
- ``float32`` — the two products in float32 (issue 34's "announced change" route, not adopted).

Divided by the two workers of ``--jobs 2`` it is a wall time, printed beside the result's measured wall time
(``run.json``) and its DP-FERMI trials' summed seconds. What the measured time has above the floor is the rest
of each step, the host draws, evaluation, compilation, the baselines and the runner.

    REPRO_DATA_MIRROR=../shared/data python benchmarks/arithmetic_floor.py RESULTS [--steps 300]

RESULTS is a folder of ``repro run … --profile full`` results (``RESULTS/<id>/full/``); the datasets are loaded
only for their number of columns.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
from float32_step import _timed as fastest  # benchmarks/, on sys.path when this script runs

from repro.learners._jax import float64, jax, jnp
from repro.learners.dp_fermi import REFERENCE, schedule
from repro.studies.dpfermi._tabular import load_dataset

#: the tabular DP-FERMI results (Figure 5 is the CNN)
RESULTS = ("dpfermi-fig-2", "dpfermi-fig-3", "dpfermi-fig-4", "dpfermi-fig-6", "dpfermi-fig-7", "dpfermi-fig-8",
           "dpfermi-fig-9", "dpfermi-fig-10", "dpfermi-noise-sweep")
JOBS = 2


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


#: setting keys that vary between the models of one trial (the figures' λ and hyperparameter settings, the noise
#: sweep's (L, D) × η_θ × λ grid)
WITHIN_TRIAL = ("knob", "hyper", "clip_L", "lr_theta", "radius_D")


def _trial(row: dict[str, str]) -> tuple[str, str]:
    """The trial a record belongs to: its setting without :data:`WITHIN_TRIAL`, and its repetition."""
    setting = ";".join(p for p in row["setting"].split(";") if p.split("=", 1)[0] not in WITHIN_TRIAL)
    return setting, row["repetition"]


def programs(folder: Path, n_of: dict[str, int]) -> tuple[list[tuple[int, int, int, int, int]], dict]:
    """The DP-FERMI programs one result ran: (rows n, columns d, models G, steps, how many), and its run.json."""
    run = json.loads((folder / "run.json").read_text())
    p = run["params"]
    shuffled = REFERENCE.with_(batch_size=int(p["batch_size"]), epochs=int(p["epochs"]))
    fermi = [r for r in _rows(folder / "trials.csv") if r["method"] == "dp-fermi"]
    models = Counter(_trial(r) for r in fermi)
    out: Counter = Counter()
    if run["result_id"] == "dpfermi-noise-sweep":   # every (L, D) × η_θ × λ of a (dataset, fairness, ε, rep)
        dataset = {_trial(r): r["dataset"] for r in fermi}
        for key, G in models.items():
            n = n_of[dataset[key]]
            out[(dataset[key], p["data"], n, G, schedule(shuffled, n)[1])] += 1
        return [(*k, v) for k, v in out.items()], run
    privacy = {(r["setting"], r["repetition"]): r for r in _rows(folder / "tables" / "privacy.csv")
               if r["method"] == "dp-fermi"}
    for key, records in models.items():
        row = privacy[key]
        # every record is one private model; the non-private λ = 0 model trains with them
        out[(p["dataset"], row["data"], int(row["n_train"]), records + 1, int(row["steps"]))] += 1
    tuning = folder / "tables" / "tuning.csv"
    if tuning.exists():
        points = Counter((r["data"], r["epsilon"], r["hyper"]) for r in _rows(tuning))
        n_train = {r["data"]: int(r["n_train"]) for r in privacy.values()}
        frac, seeds = float(p["tune_validation_fraction"]), int(p["tune_seeds"])
        for (data, _, _), P in points.items():
            n = n_train[data]
            n_fit = n - int(round(frac * n))
            out[(p["dataset"], data, n_fit, P, schedule(shuffled, n_fit)[1])] += seeds
    return [(*k, v) for k, v in out.items()], run


def seconds_per_step(n: int, d: int, G: int, B: int, steps: int) -> dict[str, float]:
    """Seconds per step of the two products (fixed batch; float64 and float32) and with the batch gathered."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d))
    idx = rng.integers(0, n, (steps, B)).astype(np.int32)
    th0 = 0.01 * rng.standard_normal((d, G))

    def timed(step, carry, xs) -> float:
        program = jax.jit(lambda c, xs: jax.lax.scan(step, c, xs)[0])
        return fastest(lambda: jax.block_until_ready(program(carry, xs)), 3)[0] / steps

    out = {}
    with float64():
        XB, Xj = jnp.asarray(X[:B]), jnp.asarray(X)
        # the step index enters as 0·i so that every step is computed, not hoisted out of the loop
        out["products"] = timed(lambda th, i: (th - 1e-3 * (XB.T @ jax.nn.sigmoid(XB @ th + 0 * i[0])), None),
                                jnp.asarray(th0), idx)
        def gathered(th, i):
            XB_i = Xj[i]
            return th - 1e-3 * (XB_i.T @ jax.nn.sigmoid(XB_i @ th)), None

        out["gather"] = timed(gathered, jnp.asarray(th0), idx)
    XB32 = jnp.asarray(X[:B], dtype=jnp.float32)
    out["float32"] = timed(lambda th, i: (th - 1e-3 * (XB32.T @ jax.nn.sigmoid(XB32 @ th + 0 * i[0])), None),
                           jnp.asarray(th0, dtype=jnp.float32), idx)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--steps", type=int, default=300, help="steps of each timed program (fastest of 3 runs)")
    args = parser.parse_args()
    folders = {rid: args.results / rid / "full" for rid in RESULTS if (args.results / rid / "full" / "run.json").exists()}
    if not folders:
        raise SystemExit(f"no full-profile tabular DP-FERMI result under {args.results}; run e.g. "
                         "`repro run dpfermi-fig-2 --profile full --out RESULTS` first.")
    # training rows of each dataset's authors' split (the noise sweep records none)
    n_of: dict[str, int] = {}
    for folder in folders.values():
        if (folder / "tables" / "privacy.csv").exists():
            p = json.loads((folder / "run.json").read_text())["params"]
            for r in _rows(folder / "tables" / "privacy.csv"):
                if r["method"] == "dp-fermi" and r["data"] == "authors":
                    n_of[p["dataset"]] = int(r["n_train"])
    cols: dict[tuple[str, str], int] = {}
    rate: dict[tuple[int, int, int], dict[str, float]] = {}
    print(f"load average {os.getloadavg()[0]:.2f}; XLA on one thread; {args.steps} timed steps per shape; "
          f"floors at --jobs {JOBS}\n")
    print("| result | DP-FERMI programs | model-steps (millions) | products, float64 | + gather | float32 | "
          "measured wall | DP-FERMI trial seconds |")
    print("|---|---|---|---|---|---|---|---|")
    total: defaultdict[str, float] = defaultdict(float)
    for rid, folder in folders.items():
        progs, run = programs(folder, n_of)
        B = int(run["params"]["batch_size"])
        floor: defaultdict[str, float] = defaultdict(float)
        model_steps = 0
        for name, data, n, G, steps, count in progs:
            if (name, data) not in cols:
                cols[(name, data)] = load_dataset(name, data).X.shape[1]
            d = cols[(name, data)]
            if (n, d, G) not in rate:
                rate[(n, d, G)] = seconds_per_step(n, d, G, B, args.steps)
            for kind, s in rate[(n, d, G)].items():
                floor[kind] += count * steps * s / JOBS
            model_steps += count * steps * G
        # a trial's seconds are on each of its records
        seen = {_trial(r): float(r["seconds"]) for r in _rows(folder / "trials.csv") if r["method"] == "dp-fermi"}
        for kind, s in floor.items():
            total[kind] += s
        total["wall"] += run["wall_seconds"]
        total["trial"] += sum(seen.values())
        print(f"| `{rid}` | {sum(c for *_, c in progs)} | {model_steps / 1e6:.1f} | {floor['products']:.0f} s | "
              f"{floor['gather']:.0f} s | {floor['float32']:.0f} s | {run['wall_seconds']:.0f} s | "
              f"{sum(seen.values()):.0f} s |")
    print(f"| **all** | | | **{total['products'] / 60:.1f} min** | {total['gather'] / 60:.1f} min | "
          f"{total['float32'] / 60:.1f} min | **{total['wall'] / 60:.1f} min** | {total['trial'] / 60:.1f} min |")


if __name__ == "__main__":
    main()
