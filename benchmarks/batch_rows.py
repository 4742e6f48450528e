"""Seconds per step of compiled DP-FERMI and DP-SGD trials with X's rows stored compactly (one-hot columns as
one byte, :mod:`repro.learners.batch_rows`) against stored as is (float64), on Adult-shaped rows, and whether
both give the same bytes.

    python benchmarks/batch_rows.py [--epochs 6] [--models 10] [--repeats 5]

Adult-shaped: 30,000 rows, 6 standardized numeric columns and 8 one-hot blocks (96 columns), as the authors'
Adult file after encoding; a batch of 1,024 rows.
"""

from __future__ import annotations

import argparse
import dataclasses
import os

import numpy as np
from float32_step import _timed  # this folder's sibling script

from repro.learners import dp_fermi_compiled, dp_sgd_unit
from repro.learners.dp_fermi import REFERENCE
from repro.learners.dp_sgd_unit import DPSGDConfig

BLOCKS = (9, 16, 7, 15, 6, 5, 2, 36)    # levels of the 8 one-hot features (96 columns)


def adult_shaped(n: int = 30_000, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    onehots = [np.eye(k)[rng.integers(0, k, n)] for k in BLOCKS]
    X = np.column_stack([rng.standard_normal((n, 6)), *onehots])
    s = (rng.random(n) < 0.33).astype(np.int64)
    y = (X[:, 0] + 0.5 * s + rng.standard_normal(n) > 0.8).astype(np.int64)
    return X, y, s


def _as_is(data: dict, X: np.ndarray) -> dict:
    return {**{k: v for k, v in data.items() if k not in ("Xc", "Xlo", "Xhi", "Xd")}, "X": X}


def _per_step(run, steps: int, repeats: int) -> tuple[float, list]:
    """Milliseconds per step, the best of ``repeats`` warm runs (this machine's speed varies within seconds)."""
    best, out = _timed(run, repeats)
    return 1e3 * best / steps, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--models", type=int, default=10, help="λ models of the DP-FERMI trial")
    parser.add_argument("--repeats", type=int, default=5, help="warm runs per case; the best is shown")
    args = parser.parse_args()
    X, y, s = adult_shaped()
    print(f"load average {os.getloadavg()[0]:.2f}")
    configs = [REFERENCE.with_(epochs=args.epochs, sigma_theta=1.0, sigma_w=1.0, lam=float(lam))
               for lam in np.linspace(0, 2, args.models)]
    for label, cfgs in ((f"DP-FERMI, {args.models} models", configs), ("DP-FERMI, 1 model", configs[-1:])):
        compact = dp_fermi_compiled.draw_trial(X, y, s, cfgs, np.random.default_rng(1))
        as_is = dataclasses.replace(compact, static=dataclasses.replace(compact.static, rows=()),
                                    data=_as_is(compact.data, X))
        times = {}
        for name, trial in (("as is", as_is), ("compact", compact)):
            times[name], out = _per_step(lambda t=trial: dp_fermi_compiled._run_drawn([t], False), trial.steps,
                                               args.repeats)
            times[name + " out"] = out
        same = all(a.tobytes() == b.tobytes() for a, b in zip(times["as is out"][0], times["compact out"][0],
                                                               strict=True))
        print(f"{label}: {times['as is']:.3f} ms a step as is, {times['compact']:.3f} compact "
              f"({times['as is'] / times['compact']:.2f}×); same bytes: {same}")
    cfg = DPSGDConfig(noise_multiplier=1.0, clip_norm=1.0, batch_size=1024, epochs=args.epochs, lr=0.1)
    compact = dp_sgd_unit.draw_trial(X, y, cfg, np.random.default_rng(2))
    as_is = dataclasses.replace(compact, rows=(), data=_as_is(compact.data, X))
    times, outs = {}, {}
    for name, trial in (("as is", as_is), ("compact", compact)):
        times[name], outs[name] = _per_step(lambda t=trial: dp_sgd_unit.fit_drawn([t]), trial.steps,
                                                args.repeats)
    same = outs["as is"][0].model.w.tobytes() == outs["compact"][0].model.w.tobytes()
    print(f"DP-SGD, 1 model: {times['as is']:.3f} ms a step as is, {times['compact']:.3f} compact "
          f"({times['as is'] / times['compact']:.2f}×); same bytes: {same}")


if __name__ == "__main__":
    main()
