"""What batching DP-FERMI trials would buy: seconds per step for 1, 10 and 30 models in one pass.

Two measurements on the Adult training split (33,916 rows × 102 features, batch 1024, the
reference variant of the tabular figures at ε = 1):

1. ``train_dp_fermi_batch`` with G = 1, 10, 30 configurations (λ and noise levels per model; the
   models share batches and noise draws, as the engine does today for the λ of one figure trial).
2. A prototype of one step batched across *seeds* (each model its own shuffled batches and its own
   generator, as separate trials need): G gathers X[idx_g], one stacked ``np.matmul`` over
   (G, m, d) @ (G, d, 1) — which calls the same per-model product as G = 1, so its bits do not depend
   on G — against G one-at-a-time steps. Only the step's array work is timed (gather, forward,
   sigmoid, backward product, noise from each model's generator, update); the ERMI part is a few
   more elementwise calls of the same kind.

    REPRO_DATA_MIRROR=../shared/data OMP_NUM_THREADS=1 python benchmarks/dpfermi_batch.py [--epochs 5]
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np
from scipy.special import expit


def _cpu(fn) -> float:
    t = time.process_time()
    fn()
    return time.process_time() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5, help="epochs per pass (the figures use 200)")
    parser.add_argument("--steps", type=int, default=300, help="steps of the seed-batching prototype")
    args = parser.parse_args()
    from repro.datasets.adult import load_adult
    from repro.datasets.tabular import standardize, train_test_indices
    from repro.learners.dp_fermi import DPFermiConfig, train_dp_fermi_batch
    from repro.privacy.dpfermi_noise import group_floor, theorem33_noise

    ds = load_adult()
    tr, _ = train_test_indices(ds.n, 0.75, rng=np.random.default_rng(0))
    X = standardize(ds.X, tr, ds.numeric_columns)[tr]
    y, s = ds.y[tr].astype(np.int64), ds.s[tr].astype(np.int64)
    n, d = X.shape
    steps = args.epochs * math.ceil(n / 1024)
    noise = theorem33_noise(n, 200 * math.ceil(n / 1024), 1024, group_floor(s), 1.0, 1 / n**2)
    ref = DPFermiConfig(lam=1.0, epochs=args.epochs, code_group=1, sigma_theta=noise.sigma_theta,
                        sigma_w=noise.sigma_w)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; n = {n}, d = {d}, {steps} steps; CPU s")
    print("1. train_dp_fermi_batch (shared batches and noise)")
    base = None
    for G in (1, 10, 30):
        grid = [ref.with_(lam=0.05 * (g + 1)) for g in range(G)]
        t = _cpu(lambda grid=grid: train_dp_fermi_batch(X, y, s, grid, rng=np.random.default_rng(1)))
        per = 1e3 * t / steps
        base = base or per
        print(f"   G = {G:2d}: {per:7.3f} ms/step, {per / G:6.3f} ms per model-step, "
              f"speedup vs G one-at-a-time {G * base / per:5.1f}x")

    print("2. prototype step batched across seeds (own batches and generators; stacked matmul)")
    def one_step(Th, b, gens, perms, t):
        """G models, each its own shuffled batch (the reference variant's sampling) and noise."""
        i0 = (t % (n // 1024)) * 1024
        if i0 == 0:
            perms[:] = [g.permutation(n) for g in gens]
        idx = np.stack([p[i0:i0 + 1024] for p in perms])
        XB, YB = X[idx], y[idx][..., None].astype(np.float64)      # (G, m, d), (G, m, 1)
        Z = np.matmul(XB, Th) + b[:, None, :]
        coef = expit(Z) - YB
        gw = np.matmul(XB.transpose(0, 2, 1), coef) / 1024.0
        u = np.stack([g.standard_normal(d + 1) for g in gens])
        return Th - 0.01 * (gw + u[:, :d, None]), b - 0.01 * (coef.sum(axis=1) + u[:, d:])

    per_g = {}
    for G in (1, 10, 30):
        gens = [np.random.default_rng(100 + g) for g in range(G)]
        Th, b = np.zeros((G, d, 1)), np.zeros((G, 1))

        def run(Th=Th, b=b, gens=gens):
            perms: list[np.ndarray] = []
            for t in range(args.steps):
                Th, b = one_step(Th, b, gens, perms, t)
        per_g[G] = 1e3 * _cpu(run) / args.steps
        print(f"   G = {G:2d}: {per_g[G]:7.3f} ms/step, {per_g[G] / G:6.3f} ms per model-step, "
              f"speedup vs G one-at-a-time {G * per_g[1] / per_g[G]:5.1f}x")


if __name__ == "__main__":
    main()
