"""Seconds per step of the baselines' batched DP-SGD core, numpy reference against the compiled engine, in the
three baselines' uses, on Adult-shaped rows (benchmarks/batch_rows.py), and how far the models differ.

    python benchmarks/batch_rows.py            # the row storage alone
    python benchmarks/baselines_core.py [--epochs 5] [--repeats 5]

Uses: Tran 2021a (5 penalty weights on one batch stream), PF-LD (one model, a noisy dual update drawn from
the run's generator after every epoch), Jagielski 2019 (6 cost-sensitive models, warm-started rounds of
``--epochs`` epochs, X prepared once). Best of ``--repeats`` runs; the two engines alternate.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from batch_rows import adult_shaped  # this folder's sibling script

from repro.learners.baselines._dpsgd import BatchedModels, cell_layout, prepare_features, train_batched_dp_sgd
from repro.learners.dp_sgd import schedule


def _uses(X: np.ndarray, y: np.ndarray, s: np.ndarray, epochs: int) -> dict:
    n = X.shape[0]
    _, per_epoch = schedule(n, 1024, 1, rule="B/n")
    dp, eo = cell_layout(s, y, "dp"), cell_layout(s, y, "eo")
    base = dict(noise_multiplier=1.0, clip_norm=1.0, lr=0.1, batch_size=1024)
    r = np.random.default_rng(5)
    costs = dict(labels=(r.random((n, 6)) < 0.5).astype(float), sample_weight=2 * r.random((n, 6)))

    def tran(engine: str) -> list:
        rng = np.random.default_rng(1)
        m = train_batched_dp_sgd(X, y, dp, weights=np.repeat(np.linspace(0, 4, 5)[:, None], 2, axis=1),
                                 steps=epochs * per_epoch, rng=rng, engine=engine, **base)
        return [m.w, m.b]

    def pf_ld(engine: str) -> list:
        rng = np.random.default_rng(2)

        def dual(epoch: int, models: BatchedModels) -> np.ndarray:
            return np.abs(rng.normal(size=(1, 2)))

        m = train_batched_dp_sgd(X, y, dp, weights=np.zeros((1, 2)), steps=epochs * per_epoch, rng=rng,
                                 on_epoch=dual, steps_per_epoch=per_epoch, engine=engine, **base)
        return [m.w, m.b]

    def jagielski(engine: str) -> list:
        rng = np.random.default_rng(3)
        rows = prepare_features(X) if engine == "compiled" else X
        models = None
        for _ in range(3):
            models = train_batched_dp_sgd(rows, y, eo, weights=np.zeros((6, 4)), steps=epochs * per_epoch, rng=rng,
                                          models=models, engine=engine, **base, **costs)
        return [models.w, models.b]

    steps = {"Tran 2021a, 5 models": epochs * per_epoch, "PF-LD, 1 model": epochs * per_epoch,
             "Jagielski 2019, 6 models, 3 rounds": 3 * epochs * per_epoch}
    return {name: (fn, steps[name]) for name, fn in zip(steps, (tran, pf_ld, jagielski), strict=True)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    X, y, s = adult_shaped()
    print(f"load average {os.getloadavg()[0]:.2f}")
    for name, (fn, steps) in _uses(X, y, s, args.epochs).items():
        out = {engine: fn(engine) for engine in ("numpy", "compiled")}      # compile, and the models
        best = {"numpy": float("inf"), "compiled": float("inf")}
        for _ in range(args.repeats):
            for engine in best:
                start = time.perf_counter()
                fn(engine)
                best[engine] = min(best[engine], time.perf_counter() - start)
        diff = max(float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(a))), 1e-300))
                   for a, b in zip(out["numpy"], out["compiled"], strict=True))
        print(f"{name}: numpy {1e3 * best['numpy'] / steps:.3f} ms a step, compiled "
              f"{1e3 * best['compiled'] / steps:.3f} ({best['numpy'] / best['compiled']:.2f}×); "
              f"largest difference {diff:.1e} of the largest entry")


if __name__ == "__main__":
    main()
