"""Seconds per step of one DP-FERMI figure trial (10 models, 30,000 × 102 rows, batch 1,024) with the batch
rows gathered inside the compiled program (the unit today) against gathered on the host with ``np.take`` and
passed to the scan as inputs (the "host-side gather" lever of issue 34), and whether both give the same bytes.

    python benchmarks/host_gather.py [--epochs 18]
"""

from __future__ import annotations

import argparse
import functools
import time

import numpy as np

from repro.learners import dp_fermi_compiled as unit
from repro.learners._jax import float64, jax, jnp
from repro.learners.dp_fermi import REFERENCE


def _step_on_rows(st, a, carry, xs):
    """The unit's step on batch rows given as inputs (an identity index list in place of the gather)."""
    XB, YB, sB, yB, mask, u, V, t = xs
    rows = {"X": XB, "Y": YB, "s": sB, "yi": yB}
    return unit._step(st, rows, a, carry, (jnp.arange(XB.shape[0], dtype=jnp.int32), mask, u, V, t))


@functools.partial(jax.jit, static_argnums=0)
def _program_on_rows(st, a, XB, YB, sB, yB):
    steps = XB.shape[0]
    carry = (a["Th"], a["b"], a["W"], a["Th"], a["b"])
    xs = (XB, YB, sB, yB, a["mask"], a["u"], a["V"], jnp.arange(1, steps + 1, dtype=jnp.int32))
    (_, _, W, th, b), _ = jax.lax.scan(functools.partial(_step_on_rows, st, a), carry, xs)
    return th, b, W


def _timed(call):
    call()  # compile
    start = time.perf_counter()
    out = call()
    return time.perf_counter() - start, out


def figure_trial(epochs: int) -> unit.DrawnTrial:
    """One drawn DP-FERMI figure trial: 10 models (λ from 0 to 2), 30,000 × 102 synthetic rows, batch 1,024."""
    rng = np.random.default_rng(0)
    n, d = 30_000, 102
    X = rng.standard_normal((n, d))
    y = (rng.random(n) < 0.3).astype(int)
    s = (rng.random(n) < 0.4).astype(int)
    configs = [REFERENCE.with_(epochs=epochs, sigma_theta=1.0, sigma_w=1.0, lam=float(lam))
               for lam in np.linspace(0, 2, 10)]
    return unit.draw_trial(X, y, s, configs, np.random.default_rng(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=18)
    args = parser.parse_args()
    trial = figure_trial(args.epochs)
    configs = trial.configs
    st, a, data = trial.static, trial.arrays, trial.data
    steps = a["idx"].shape[0]
    with float64():
        t_inside, inside = _timed(lambda: [np.asarray(v)[0] for v in
                                           unit._program(st, True)(data, {k: v[None] for k, v in a.items()})])
        start = time.perf_counter()
        rows = [np.take(data[key], a["idx"], axis=0) for key in ("X", "Y", "s", "yi")]
        t_gather = time.perf_counter() - start
        rest = {k: v for k, v in a.items() if k != "idx"}
        t_rows, given = _timed(lambda: [np.asarray(v) for v in _program_on_rows(st, rest, *rows)])
    print(f"load average {__import__('os').getloadavg()[0]:.2f}; {steps} steps, {len(configs)} models")
    print(f"rows gathered in the program: {1e3 * t_inside / steps:.3f} ms a step")
    print(f"rows gathered on the host: {1e3 * t_gather / steps:.3f} ms a step (np.take) + "
          f"{1e3 * t_rows / steps:.3f} ms a step (the program)")
    print("same bytes:", all(u.tobytes() == v.tobytes() for u, v in zip(inside, given, strict=True)))


if __name__ == "__main__":
    main()
