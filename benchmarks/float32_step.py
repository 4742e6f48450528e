"""Seconds per step of one DP-FERMI figure trial (10 models, 30,000 × 102 rows, batch 1,024) in float64 (the unit
today: the reference engine's numbers to 1e-9) against the same program in float32 (issue 34's "announced change"
route on a CPU, not adopted), with how far float32 moves the trained models.

    python benchmarks/float32_step.py [--epochs 18] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from host_gather import figure_trial  # benchmarks/, on sys.path when this script runs

from repro.learners import dp_fermi_compiled as unit
from repro.learners._jax import float64


def _timed(call, repeats: int):
    """(fastest of ``repeats`` timed calls after a compiling one, the output)."""
    out = call()  # compile
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        out = call()
        best = min(best, time.perf_counter() - start)
    return best, out


def _as32(tree: dict) -> dict:
    out = {}
    for key, v in tree.items():
        v = np.asarray(v)
        out[key] = v.astype(np.float32) if v.dtype == np.float64 else v.astype(np.int32) if v.dtype == np.int64 else v
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=18)
    parser.add_argument("--repeats", type=int, default=5, help="timed calls per precision (the fastest counts)")
    args = parser.parse_args()
    trial = figure_trial(args.epochs)   # the trial host_gather.py times
    configs = trial.configs
    st, a, data = trial.static, trial.arrays, trial.data
    steps = a["idx"].shape[0]
    stacked = {k: v[None] for k, v in a.items()}
    with float64():
        t64, out64 = _timed(lambda: [np.asarray(v)[0] for v in unit._program(st, True)(data, stacked)], args.repeats)
    unit._program.cache_clear()   # the same structure, traced again without x64
    d32, a32 = _as32(data), _as32(stacked)
    t32, out32 = _timed(lambda: [np.asarray(v)[0] for v in unit._program(st, True)(d32, a32)], args.repeats)
    print(f"load average {os.getloadavg()[0]:.2f}; {steps} steps, {len(configs)} models")
    print(f"fastest of {args.repeats}: float64 {1e3 * t64 / steps:.3f} ms a step; float32: {1e3 * t32 / steps:.3f} ms a step "
          f"({t64 / t32:.2f}x); dtypes {out64[0].dtype} / {out32[0].dtype}")
    th64, th32 = out64[0], out32[0].astype(np.float64)
    rel = np.abs(th32 - th64).max() / np.abs(th64).max()
    print(f"largest change of a final θ entry in float32, relative to the largest entry: {rel:.1e}")


if __name__ == "__main__":
    main()
