"""The two products of a DP-FERMI step on one-hot rows: dense (what the unit computes) against a form that
reads only each row's nonzero one-hot columns, in float64 (issue 34: the one lever left that keeps float64).

Adult-shaped rows: 6 standardised numeric columns and 8 categorical variables of 12 levels one-hot encoded
(102 columns, 8 ones per row), 10 models, batch 1,024, each step's rows gathered from 30,000. The logits
X_B·Θ become the numeric part's product plus a sum of 8 gathered rows of Θ; the gradient X_Bᵀ·R becomes the
numeric part's product plus a scatter-add of each row's residuals into its 8 columns. The sums run in another
order, so the models move by rounding (printed): records would equal today's to 1e-9, not byte for byte, and
every tabular result would need its full rerun. Not adopted; this measures what it would give.

    python benchmarks/onehot_products.py [--steps 2000] [--models 10]
"""

from __future__ import annotations

import argparse
import os

import numpy as np
from float32_step import _timed  # benchmarks/, on sys.path when this script runs

from repro.learners._jax import float64, jax, jnp

NUMERIC, VARIABLES, LEVELS, ROWS, BATCH = 6, 8, 12, 30_000, 1_024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--models", type=int, default=10)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    d, G = NUMERIC + VARIABLES * LEVELS, args.models
    codes = rng.integers(0, LEVELS, (ROWS, VARIABLES))
    X = np.zeros((ROWS, d))
    X[:, :NUMERIC] = rng.standard_normal((ROWS, NUMERIC))
    active = (NUMERIC + np.arange(VARIABLES) * LEVELS + codes).astype(np.int32)   # each row's one-hot columns
    X[np.arange(ROWS)[:, None], active] = 1.0
    idx = rng.integers(0, ROWS, (args.steps, BATCH)).astype(np.int32)
    theta = 0.01 * rng.standard_normal((d, G))
    with float64():
        Xj, Aj, Nj = jnp.asarray(X), jnp.asarray(active), jnp.asarray(X[:, :NUMERIC])

        def dense(th, i):
            XB = Xj[i]
            return th - 1e-3 * (XB.T @ jax.nn.sigmoid(XB @ th)), None

        def onehot(th, i):
            A, XN = Aj[i], Nj[i]
            R = jax.nn.sigmoid(XN @ th[:NUMERIC] + th[A].sum(axis=1))
            grad = jnp.zeros((d, G)).at[A.reshape(-1)].add(jnp.repeat(R, VARIABLES, axis=0))
            return th - 1e-3 * grad.at[:NUMERIC].set(XN.T @ R), None

        results = {}
        for name, step in (("dense", dense), ("one-hot columns only", onehot)):
            program = jax.jit(lambda c, xs, step=step: jax.lax.scan(step, c, xs)[0])
            t, out = _timed(lambda program=program: jax.block_until_ready(program(jnp.asarray(theta), idx)), 3)
            results[name] = (t, np.asarray(out))
    print(f"load average {os.getloadavg()[0]:.2f}; {args.steps} steps, {G} models, batch {BATCH}, "
          f"{ROWS} × {d} rows ({VARIABLES} ones per row)")
    (t_dense, th_dense), (t_sparse, th_sparse) = results.values()
    for name, (t, _) in results.items():
        print(f"{name}: {1e3 * t / args.steps:.3f} ms a step (gather and the two products)")
    rel = np.abs(th_sparse - th_dense).max() / np.abs(th_dense).max()
    print(f"ratio {t_dense / t_sparse:.2f}x; largest change of a final θ entry, relative to the largest: {rel:.1e}")


if __name__ == "__main__":
    main()
