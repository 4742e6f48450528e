"""Feature rows stored for fast batch gathers inside the compiled learners (issue 34).

A compiled step starts by gathering its batch's rows, ``X[idx]``: on Adult (30,000 × 102 float64, 24 MB)
that reads 8 bytes per feature from memory that does not fit in the cache. Most tabular features are one-hot
indicators (96 of Adult's 102 columns), which take two values. :func:`compact` stores such columns as one
byte per entry with their two values, the others as float64, and :func:`gather` rebuilds the rows by
selecting between the two values (no arithmetic), so it gives the exact doubles of ``X[idx]`` and the
program computes the same bytes as on ``X`` itself (``tests/learners/test_batch_rows.py``). Measured
(``benchmarks/batch_rows.py``): a 10-model figure step 1.0–1.3× faster, a one-model step 1.4–1.9×.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from repro.learners._jax import jnp

__all__ = ["PAD", "Runs", "compact", "gather", "padded"]

#: Poisson batches are padded to a multiple of this many rows (few distinct program shapes)
PAD = 64

#: X's columns in order, as runs (two-valued?, start, stop) of the two stored blocks; () = X stored as is
Runs = tuple[tuple[bool, int, int], ...]

_NEGATIVE_ZERO = np.int64(-(2**63))  # the bits of −0.0, the one double that equals another (+0.0)


def compact(X: np.ndarray) -> tuple[dict[str, np.ndarray], Runs]:
    """The arrays a compiled program gathers rows from, and their :data:`Runs`.

    Two-valued columns go to ``Xc`` (uint8: 1 where the column holds its larger value ``Xhi``, 0 where it
    holds ``Xlo``), the others to ``Xd`` (float64). Without a two-valued column, or when X holds a −0.0
    (which equals +0.0, so a select could give the other zero's bits), the arrays are ``{"X": X}``.
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] == 0 or bool((X.view(np.int64) == _NEGATIVE_ZERO).any()):
        return {"X": X}, ()
    lo, hi = X.min(axis=0), X.max(axis=0)
    is_hi = X == hi
    two = np.logical_or(is_hi, X == lo).all(axis=0)
    if not two.any():
        return {"X": X}, ()
    runs: list[list] = []        # (two-valued?, start, stop) in its block
    spans: list[list] = []       # the same runs as X's columns
    count = {True: 0, False: 0}
    for j, kind in enumerate(two.tolist()):
        if spans and spans[-1][0] == kind:
            spans[-1][2] = j + 1
            runs[-1][2] += 1
        else:
            spans.append([kind, j, j + 1])
            runs.append([kind, count[kind], count[kind] + 1])
        count[kind] += 1

    def block(kind: bool, source: np.ndarray) -> np.ndarray:
        parts = [source[:, a:b] for k, a, b in spans if k == kind]
        return np.ascontiguousarray(np.concatenate(parts, axis=1) if len(parts) > 1 else parts[0])

    arrays = {"Xc": block(True, is_hi).view(np.uint8), "Xlo": lo[two], "Xhi": hi[two]}
    arrays["Xd"] = block(False, X) if not two.all() else np.zeros((X.shape[0], 0))
    return arrays, tuple((kind, start, stop) for kind, start, stop in runs)


def gather(arrays: dict, idx, runs: Runs):
    """The rows ``idx`` of X, the same doubles as ``X[idx]``, from :func:`compact`'s arrays (inside a program)."""
    if not runs:
        return arrays["X"][idx]
    two = jnp.where(arrays["Xc"][idx] != 0, arrays["Xhi"], arrays["Xlo"])
    dense = arrays["Xd"][idx]
    parts = [(two if kind else dense)[:, start:stop] for kind, start, stop in runs]
    return parts[0] if len(parts) == 1 else jnp.concatenate(parts, axis=1)


def padded(batches: Sequence[np.ndarray], *, multiple: int = PAD, at_least: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Batches of row indices as the fixed-size (steps, rows) index list and 0/1 mask a program scans: rows is
    the largest batch (at least ``at_least``) rounded up to a multiple of ``multiple``; padded slots hold row 0
    with mask 0, so they add exact zeros to every sum."""
    largest = max(max((bt.size for bt in batches), default=1), at_least, 1)
    rows = multiple * math.ceil(largest / multiple)
    idx = np.zeros((len(batches), rows), dtype=np.int32)
    mask = np.zeros((len(batches), rows))
    for t, bt in enumerate(batches):
        idx[t, :bt.size] = bt
        mask[t, :bt.size] = 1.0
    return idx, mask
