"""Seconds per training run of DP-FERMI and its baselines on Adult (the tabular figures' unit of work).

Measures, on the real Adult split (33,916 training rows, 102 features, batch 1024):

- one DP-FERMI run of 200 epochs (6,800 steps) through the ONE engine
  (:func:`repro.learners.dp_fermi.train_dp_fermi`), variant ``reference`` (code_1x1, batch clip,
  Theorem 3.3(a) noise at ε = 1), ``strict`` (full ERMI, noise on the sensitive parts only) and
  ``strict-all`` (full ERMI, per-sample clipping of everything);
- one DP-FERMI figure trial: the 5 λ of the released Adult grid and the non-private model trained
  together (:func:`repro.learners.dp_fermi.train_dp_fermi_batch`, 6 models, one matmul per step);
- Tran et al. 2021a: 6 γ models trained together (one matrix product per step), 50 and 200 epochs;
- PF-LD, 50 epochs; Jagielski et al. 2019: 6 bounds × 10 rounds × 5 epochs;
- the per-step cost of the batched DP-SGD core for G = 1, 6, 15 models (what vectorizing across
  seeds or λ would buy).

Targets (issue #6): ≤ 5 s per DP-FERMI Adult run of 200 epochs; the authors' PyTorch code is the
anchor (≈ 227 s per 50-epoch run, measured-anchors.md). The machine is shared: the load average is
printed with the numbers.

    REPRO_DATA_MIRROR=../shared/data OMP_NUM_THREADS=1 python benchmarks/dpfermi.py [--repeats 2]
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np


def _best(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    from repro.datasets.adult import load_adult
    from repro.datasets.tabular import standardize, train_test_indices
    from repro.learners.baselines import train_jagielski_2019, train_pf_ld, train_tran_2021a
    from repro.learners.baselines._dpsgd import cell_layout, train_batched_dp_sgd
    from repro.learners.dp_fermi import (
        STRICT_ALL_FEATURES,
        STRICT_SENSITIVE,
        DPFermiConfig,
        train_dp_fermi,
        train_dp_fermi_batch,
    )
    from repro.privacy.accounting import calibrate_noise_multiplier, opacus_sampling
    from repro.privacy.dpfermi_noise import group_floor, theorem33_noise

    ds = load_adult()
    rng = np.random.default_rng(0)
    tr, _ = train_test_indices(ds.n, 0.75, rng=rng)
    X = standardize(ds.X, tr, ds.numeric_columns)[tr]
    y, s = ds.y[tr].astype(np.int64), ds.s[tr].astype(np.int64)
    n = X.shape[0]
    steps = 200 * math.ceil(n / 1024)
    delta = 1 / n**2
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; Adult n_train = {n}, T = {steps}")
    noise = theorem33_noise(n, steps, 1024, group_floor(s), 1.0, delta)
    ref = DPFermiConfig(lam=1.0, epochs=200, code_group=1, sigma_theta=noise.sigma_theta, sigma_w=noise.sigma_w)
    t = _best(lambda: train_dp_fermi(X, y, s, ref, rng=np.random.default_rng(1)), args.repeats)
    print(f"DP-FERMI reference, 200 epochs, λ = 1, ε = 1: {t:.2f} s per run ({1e3 * t / steps:.3f} ms/step)")
    grid = [ref.with_(lam=lam) for lam in (0.0, 0.25, 0.5, 0.75, 1.0)] + [ref.with_(lam=0.0, sigma_theta=0.0,
                                                                                    sigma_w=0.0)]
    t = _best(lambda: train_dp_fermi_batch(X, y, s, grid, rng=np.random.default_rng(1)), args.repeats)
    print(f"DP-FERMI reference, one figure trial = 5 λ + non-private, trained together: {t:.2f} s "
          f"({t / 6:.2f} s per model)")
    q, T = opacus_sampling(n, 1024, 200)
    z = calibrate_noise_multiplier(1.0, delta, q, T)
    for name, engine in (("strict", STRICT_SENSITIVE), ("strict-all", STRICT_ALL_FEATURES)):
        cfg = engine.with_(lam=1.0, epochs=200, noise_multiplier=z)
        t = _best(lambda c=cfg: train_dp_fermi(X, y, s, c, rng=np.random.default_rng(1)), args.repeats)
        print(f"DP-FERMI {name}, 200 epochs, λ = 1, ε = 1: {t:.2f} s per run")
    eo = ref.with_(fairness="eo")
    t = _best(lambda: train_dp_fermi(X, y, s, eo, rng=np.random.default_rng(1)), args.repeats)
    print(f"DP-FERMI reference EO, 200 epochs: {t:.2f} s per run")
    for epochs in (50, 200):
        t = _best(lambda e=epochs: train_tran_2021a(X, y, s, gammas=[0, 0.25, 0.5, 1, 2, 5], epsilon=1.0,
                                                    delta=delta, epochs=e, rng=np.random.default_rng(1)),
                  args.repeats)
        print(f"Tran 2021a, 6 γ models together, {epochs} epochs: {t:.2f} s ({t / 6:.2f} s per model)")
    t = _best(lambda: train_pf_ld(X, y, s, epsilon=1.0, delta=delta, epochs=50, rng=np.random.default_rng(1)),
              args.repeats)
    print(f"PF-LD, 50 epochs: {t:.2f} s")
    t = _best(lambda: train_jagielski_2019(X, y, s, bounds=[0, 1, 3, 10, 30, 100], epsilon=1.0, delta=delta,
                                           rng=np.random.default_rng(1)), args.repeats)
    print(f"Jagielski 2019, 6 bounds × 10 rounds × 5 epochs: {t:.2f} s")
    lay = cell_layout(s, y, "dp")
    for G in (1, 6, 15):
        t = _best(lambda g=G: train_batched_dp_sgd(X, y, lay, weights=np.ones((g, 2)), noise_multiplier=1.0,
                                                   clip_norm=1.0, lr=0.1, batch_size=1024, steps=340,
                                                   rng=np.random.default_rng(0)), args.repeats)
        print(f"batched DP-SGD core, G = {G:2d} models: {1e3 * t / 340:.3f} ms/step ({1e3 * t / 340 / G:.3f} per model)")


if __name__ == "__main__":
    main()
