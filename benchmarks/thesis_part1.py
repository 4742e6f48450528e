"""Speed of the thesis Part I pipeline: one DP-SGD run (Adult, 50 epochs), one DP-FERMI run
(reference code path and strict), and optionally the wall time of all four tables at the full profile.

Targets (issue #3), on the 2-core machine: ≤ 1 s per DP-SGD run, ≤ 3 s per DP-FERMI run, the four
full tables ≤ 5 minutes. Anchor (measured-anchors.md): the authors' PyTorch + Opacus code takes
≈ 174 s per Algorithm 2 run and ≈ 227 s per DP-FERMI run.

    REPRO_DATA_MIRROR=../shared/data python benchmarks/thesis_part1.py [--repeats 3] [--tables] [--jobs 2]
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from repro.learners.dp_fermi import (
    REFERENCE,
    STRICT_ALL_FEATURES,
    train_dp_fermi,
)
from repro.learners.dp_sgd import train_dp_sgd_logistic
from repro.privacy.accounting import calibrate_noise_multiplier, opacus_sampling
from repro.privacy.dpfermi_noise import group_floor, thesis_all_feature_noise
from repro.studies.thesis.part1_tables import prepare


def _time(fn, repeats: int) -> str:
    """Median wall and CPU seconds (CPU time is the better guide on a shared, loaded machine)."""
    wall, cpu = [], []
    for r in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        fn(r)
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return f"{np.median(wall):.3f} s wall ({np.median(cpu):.3f} s CPU)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tables", action="store_true", help="also time `repro run` of the 4 full tables")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()

    ds, sp, X = prepare("adult", 0, "fixed", 0, 0)
    Xa = np.hstack([X, ds.s[:, None].astype(float)])
    q, steps = opacus_sampling(sp.train.size, 1024, 50)
    t = time.perf_counter()
    nm = calibrate_noise_multiplier(2.9, 1e-5, q, steps)
    print(f"noise calibration (PLD, q={q:.4f}, T={steps}): {time.perf_counter() - t:.2f} s (once per worker)")
    print(f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    sec = _time(lambda r: train_dp_sgd_logistic(Xa[sp.train], ds.y[sp.train], noise_multiplier=nm,
                                                rng=np.random.default_rng(r)), args.repeats)
    print(f"DP-SGD, Adult, 50 epochs ({steps} steps): {sec} per run  (target <= 1 s; Opacus anchor 171 s)")

    tr = sp.full_train
    n = tr.size
    T = 50 * math.ceil(n / 1024)
    st, sw = thesis_all_feature_noise(n, T, group_floor(ds.s[tr]), 3.0)
    cfg = REFERENCE.with_(lam=1.0, sigma_theta=st, sigma_w=sw, code_group=1)
    sec = _time(lambda r: train_dp_fermi(X[tr], ds.y[tr], ds.s[tr], cfg, rng=np.random.default_rng(r)),
                args.repeats)
    print(f"DP-FERMI reference, Adult, 50 epochs ({T} steps): {sec} per run  (target <= 3 s; anchor 227 s)")
    q2, steps2 = opacus_sampling(n, 1024, 50)
    nm2 = calibrate_noise_multiplier(3.0, 1e-5, q2, steps2)
    scfg = STRICT_ALL_FEATURES.with_(lam=1.0, noise_multiplier=nm2)
    sec = _time(lambda r: train_dp_fermi(X[tr], ds.y[tr], ds.s[tr], scfg, rng=np.random.default_rng(r)),
                args.repeats)
    print(f"DP-FERMI strict, Adult, 50 epochs ({steps2} steps): {sec} per run")

    if args.tables:
        with tempfile.TemporaryDirectory() as out:
            t0 = time.perf_counter()
            for tab in ("3.1", "3.2", "3.3", "3.4"):
                t = time.perf_counter()
                subprocess.run([sys.executable, "-m", "repro", "run", f"thesis-table-{tab}", "--profile", "full",
                                "--jobs", str(args.jobs), "--out", out], check=True, capture_output=True)
                print(f"thesis-table-{tab} full, --jobs {args.jobs}: {time.perf_counter() - t:.1f} s")
            print(f"all four tables: {time.perf_counter() - t0:.1f} s  (target <= 300 s)")


if __name__ == "__main__":
    main()
