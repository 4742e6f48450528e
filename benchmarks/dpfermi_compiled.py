"""Seconds per model-step of the private learners: the numpy reference engines vs the compiled learner units.

On the Adult training split (33,916 rows × 102 features, batch 1024, the reference variant's switches
with Theorem 3.3(a) noise at ε = 1; then the strict variant), one trial of ``--lambdas`` models:

1. the numpy reference engine (``train_dp_fermi_batch``), one trial;
2. the compiled engine (``dp_fermi_compiled.fit_many``), one trial, compile time reported apart;
3. the compiled engine, ``--trials`` trials (seeds) in one program (``lax.map``);
4. DP-SGD (Algorithm 2's base model: one model, Poisson batches of ≈ 1,024 of 22,610 rows, z = 1): the numpy
   reference ``train_dp_sgd_logistic`` vs the compiled ``dp_sgd_unit.train``.

Every timing is CPU seconds of this process (``time.process_time``; XLA's CPU pool is pinned to one
thread, numpy's BLAS by ``OMP_NUM_THREADS=1``), so the figures compare on a shared machine too.

    REPRO_DATA_MIRROR=../shared/data OMP_NUM_THREADS=1 python benchmarks/dpfermi_compiled.py [--epochs 5]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np


def _cpu(fn):
    t = time.process_time()
    out = fn()
    return time.process_time() - t, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5, help="epochs per trial (the figures use 200)")
    parser.add_argument("--lambdas", type=int, default=6, help="models (λ values) per trial")
    parser.add_argument("--trials", type=int, default=10, help="trials (seeds) in one compiled program")
    args = parser.parse_args()
    from repro.datasets.adult import load_adult
    from repro.datasets.tabular import standardize, train_test_indices
    from repro.learners.dp_fermi import REFERENCE, STRICT_SENSITIVE, train_dp_fermi_batch
    from repro.learners.dp_fermi_compiled import fit_many
    from repro.privacy.dpfermi_noise import group_floor, theorem33_noise

    ds = load_adult()
    tr, _ = train_test_indices(ds.n, 0.75, rng=np.random.default_rng(0))
    X = standardize(ds.X, tr, ds.numeric_columns)[tr]
    y, s = ds.y[tr].astype(np.int64), ds.s[tr].astype(np.int64)
    n, d = X.shape
    steps = args.epochs * math.ceil(n / 1024)
    noise = theorem33_noise(n, steps, 1024, group_floor(s), 1.0, 1 / n**2, warn=False)
    lams = np.linspace(0, 3, args.lambdas)
    variants = {
        "reference": REFERENCE.with_(epochs=args.epochs, sigma_theta=noise.sigma_theta, sigma_w=noise.sigma_w),
        "strict": STRICT_SENSITIVE.with_(epochs=args.epochs, noise_multiplier=5.0),
    }
    print(f"Adult n={n}, d={d}, {args.lambdas} models per trial, {args.epochs} epochs")
    print("| variant | engine | trials | CPU s | steps | µs per model-step |")
    print("|---|---|---|---|---|---|")
    for name, cfg in variants.items():
        cfgs = [cfg.with_(lam=float(lam)) for lam in lams]
        sec, res = _cpu(lambda cfgs=cfgs: train_dp_fermi_batch(X, y, s, cfgs, rng=np.random.default_rng(1)))
        T = res[0].steps
        print(f"| {name} | numpy | 1 | {sec:.2f} | {T} | {1e6 * sec / (T * len(cfgs)):.1f} |")
        first, _ = _cpu(lambda cfgs=cfgs: fit_many(X, y, s, [cfgs], [np.random.default_rng(1)]))
        sec, _ = _cpu(lambda cfgs=cfgs: fit_many(X, y, s, [cfgs], [np.random.default_rng(1)]))
        print(f"| {name} | compiled (first call {first:.1f} s, compile included) | 1 | {sec:.2f} | {T} | "
              f"{1e6 * sec / (T * len(cfgs)):.1f} |")
        gens = [np.random.default_rng(i) for i in range(args.trials)]
        fit_many(X, y, s, [cfgs] * args.trials, gens)
        gens = [np.random.default_rng(i) for i in range(args.trials)]
        sec, _ = _cpu(lambda cfgs=cfgs, gens=gens: fit_many(X, y, s, [cfgs] * args.trials, gens))
        print(f"| {name} | compiled, {args.trials} trials in one program | {args.trials} | {sec:.2f} | {T} | "
              f"{1e6 * sec / (T * len(cfgs) * args.trials):.1f} |")
    from repro.learners.dp_sgd import train_dp_sgd_logistic
    from repro.learners.dp_sgd_unit import DPSGDConfig, train

    fit = slice(0, 22_610)
    Xs = np.hstack([X, s[:, None].astype(float)])[fit]
    cfg = DPSGDConfig(noise_multiplier=1.0, epochs=args.epochs)
    sec, res = _cpu(lambda: train_dp_sgd_logistic(Xs, y[fit], noise_multiplier=1.0, epochs=args.epochs,
                                                  rng=np.random.default_rng(2)))
    print(f"| DP-SGD | numpy | 1 | {sec:.2f} | {res.steps} | {1e6 * sec / res.steps:.1f} |")
    train(Xs, y[fit], cfg, rng=np.random.default_rng(2))
    sec, res = _cpu(lambda: train(Xs, y[fit], cfg, rng=np.random.default_rng(2)))
    print(f"| DP-SGD | compiled (host Poisson draws included) | 1 | {sec:.2f} | {res.steps} | "
          f"{1e6 * sec / res.steps:.1f} |")
    import os

    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
