"""The baselines' batched DP-SGD core compiled: the steps of G models in one JAX program per epoch.

The numpy loop of :func:`repro.learners.baselines._dpsgd.train_batched_dp_sgd` (``engine="numpy"``) is the
reference; this module runs
its step (gap penalty, per-sample clipping, Gaussian noise on the clipped sum, the update) with the same
draws: the host draws each step's Poisson batch and noise from the run's generator in the reference's order,
an epoch at a time, and the program scans the epoch's steps. Between epochs the caller's ``on_epoch`` runs
on the host (PF-LD's noisy dual update draws from the same generator there, as in the reference). So the
models equal the reference's up to floating-point summation order (float64, tested to 1e-9).

A batch is a fixed-size row list with a mask (padded rows add exact zeros to every sum), and a step past the
end of the run is a step with an empty batch and no noise, which leaves the models as they are. X's rows are
gathered through :mod:`repro.learners.batch_rows`. Spec: seed-004-dpfermi.md §8 (the baselines' DP-SGD).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from repro.learners import batch_rows
from repro.learners._jax import float64, jax, jnp
from repro.privacy.sampling import poisson_batch

__all__ = ["Features", "prepare_features", "train_batched_compiled"]

@dataclass(frozen=True)
class Features:
    """X prepared once for every call of the core on it (Jagielski's rounds call it once per round): the
    array itself, its rows' norms ‖[x, 1]‖ (the per-sample clip's), and its rows stored for the program
    (:func:`repro.learners.batch_rows.compact`), on the device."""

    X: np.ndarray
    row_norm: np.ndarray
    runs: batch_rows.Runs
    stored: dict


def draw_step(n: int, q: float, sigma: float, shape: tuple[int, int], rng: np.random.Generator
              ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """One step's draws, in the trainers' order: the Poisson batch (:func:`repro.privacy.sampling.poisson_batch`),
    then, when ``sigma`` > 0, N(0, σ²) noise of the weights (``shape`` = (d, G)) and of the G biases. Both
    engines and the shipped-configuration audit (:mod:`repro.studies.audit.subsampled`) draw through it."""
    batch = poisson_batch(n, q, rng=rng)
    if sigma <= 0:
        return batch, None, None
    return batch, rng.normal(0.0, sigma, size=shape), rng.normal(0.0, sigma, size=shape[1])


def prepare_features(X: np.ndarray) -> Features:
    """:class:`Features` of X (float64, C order)."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    stored, runs = batch_rows.compact(X)
    with float64():
        return Features(X, np.sqrt(np.einsum("ij,ij->i", X, X) + 1.0), runs, jax.device_put(stored))


def _step(st: tuple, data: dict, carry, xs):
    """One step of the reference loop for all G models (shapes: w (d, G), b (G,))."""
    runs, penalty, K, R = st
    w, b, weights = carry
    idx, mask, noise_w, noise_b = xs
    XB = batch_rows.gather(data, idx, runs)
    F = jax.nn.sigmoid(XB @ w + b[None, :])
    coef = F - data["lab"][idx]
    if "sw" in data:
        coef = coef * data["sw"][idx]
    if penalty:
        Oc = (data["cell"][idx][:, None] == jnp.arange(K)[None, :]) * mask[:, None]
        Or = (data["ref"][idx][:, None] == jnp.arange(R)[None, :]) * mask[:, None]
        mc, mr = Oc.sum(axis=0), Or.sum(axis=0)
        mean_c = (Oc.T @ F) / jnp.maximum(mc, 1.0)[:, None]
        mean_r = (Or.T @ F) / jnp.maximum(mr, 1.0)[:, None]
        gap = jnp.where((mc > 0)[:, None], mean_c - mean_r[data["cell_ref"]], 0.0)
        a = jnp.sign(gap) * weights.T
        Ocr = (data["cell_ref"][:, None] == jnp.arange(R)[None, :]).astype(F.dtype)
        a_ref = Ocr.T @ a
        dP = Oc @ (a / jnp.maximum(mc, 1.0)[:, None]) - Or @ (a_ref / jnp.maximum(mr, 1.0)[:, None])
        coef = coef + data["expected"] * dP * F * (1 - F)
    coef = coef * mask[:, None]
    clip = jnp.minimum(1.0, data["clip_norm"] / (jnp.abs(coef) * data["row_norm"][idx][:, None] + 1e-6))
    cc = coef * clip
    gw = XB.T @ cc + noise_w
    gb = cc.sum(axis=0) + noise_b
    w = w - data["lr"] * gw / data["expected"]
    b = b - data["lr"] * gb / data["expected"]
    return (w, b, weights), None


@functools.lru_cache(maxsize=32)
def _program(st: tuple):
    def run(data, w, b, weights, xs):
        (w, b, _), _ = jax.lax.scan(functools.partial(_step, st, data), (w, b, weights), xs)
        return w, b
    return jax.jit(run)


def train_batched_compiled(features: Features, lab: np.ndarray, sw: np.ndarray | None, layout, *,
                           weights: np.ndarray, w: np.ndarray, b: np.ndarray, sigma: float, clip_norm: float,
                           lr: float, q: float, expected: int, steps: int, per_epoch: int,
                           rng: np.random.Generator,
                           on_epoch: Callable[[int, np.ndarray, np.ndarray], np.ndarray | None] | None
                           ) -> tuple[np.ndarray, np.ndarray]:
    """``steps`` steps from (w, b) as the reference loop runs them (its inputs already checked and prepared
    by :func:`repro.learners.baselines._dpsgd.train_batched_dp_sgd`); returns the final (w, b).

    ``on_epoch(epoch, w, b)`` is called after every ``per_epoch`` steps and may return new penalty weights."""
    n, d = features.X.shape
    G = w.shape[1]
    runs = features.runs
    data = {"lab": lab, "cell": layout.cell.astype(np.int32), "ref": layout.ref.astype(np.int32),
            "cell_ref": layout.cell_ref.astype(np.int32), "row_norm": features.row_norm,
            "clip_norm": np.float64(clip_norm), "lr": np.float64(lr), "expected": np.float64(expected)}
    if sw is not None:
        data["sw"] = sw
    penalty = on_epoch is not None or bool(np.any(weights))
    st = (runs, penalty, int(layout.cell_ref.size), int(layout.cell_ref.max()) + 1)
    # rows of a padded batch: enough for all but a ~1e-9 tail of Poisson sizes (a larger batch gets its own)
    bound = math.ceil(n * q + 6 * math.sqrt(n * q * (1 - q)) + 1)
    chunk = max(1, min(per_epoch, steps))
    with float64():
        device = {**features.stored, **jax.device_put(data)}
        t = 0
        while t < steps:
            count = min(chunk, steps - t)
            batches, nw, nb = [], np.zeros((chunk, d, G)), np.zeros((chunk, G))
            for i in range(count):
                batch, noise_w, noise_b = draw_step(n, q, sigma, (d, G), rng)
                batches.append(batch)
                if noise_w is not None:
                    nw[i], nb[i] = noise_w, noise_b
            empty = [np.zeros(0, dtype=np.int64)] * (chunk - count)      # steps past the end: no-ops
            idx, mask = batch_rows.padded(batches + empty, at_least=bound)
            out = _program(st)(device, w, b, np.asarray(weights, dtype=np.float64), (idx, mask, nw, nb))
            w, b = (np.array(v) for v in out)
            t += count
            if on_epoch is not None and count == chunk and t % per_epoch == 0:
                new = on_epoch(t // per_epoch - 1, w, b)
                if new is not None:
                    weights = np.array(new, dtype=np.float64, ndmin=2)
    return w, b
