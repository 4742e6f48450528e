"""The batch samplers: one function per sampling scheme, drawn on the host from an explicit generator.

Every learner, baseline, audit and compiled program draws its batches here, so a scheme's law is written
(and tested, ``tests/privacy/test_sampling.py``) once:

- :func:`poisson_batch` / :func:`poisson_batches`: Poisson subsampling, each record independently with
  probability q at every step (Opacus; the scheme the subsampled-Gaussian accountant assumes, spec
  seed-003 §2.7 step 3, seed-004 §4.4). Draws: ``rng.random(n)`` per step.
- :func:`fixed_size_batch`: B rows drawn uniformly without replacement, independently per step
  (``rng.choice(n, B, replace=False)``). Not covered by a Poisson accountant.
- :func:`shuffled_batches`: one epoch of a shuffled data loader, a permutation cut into batches of B (the
  last one partial; ``rng.permutation(n)``). Not covered by a Poisson accountant.

The draws and their order are those the trainers made before this module existed, so results are unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from repro.errors import InvalidParameterError

__all__ = ["poisson_batch", "poisson_batches", "fixed_size_batch", "shuffled_batches"]


def poisson_batch(n: int, q: float, *, rng: np.random.Generator) -> np.ndarray:
    """Indices of a Poisson-sampled batch: each of ``n`` records independently with probability ``q``."""
    return np.flatnonzero(rng.random(n) < q)


def poisson_batches(n: int, q: float, steps: int, *, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """``steps`` independent Poisson batches of rate ``q`` on ``n`` records (:func:`poisson_batch`)."""
    if not 0 <= q <= 1 or steps < 0:
        raise InvalidParameterError(f"need 0 <= q <= 1 and steps >= 0; got q={q}, steps={steps}.")
    for _ in range(steps):
        yield poisson_batch(n, q, rng=rng)


def fixed_size_batch(n: int, size: int, *, rng: np.random.Generator) -> np.ndarray:
    """``min(size, n)`` distinct indices drawn uniformly without replacement."""
    return rng.choice(n, size=min(size, n), replace=False)


def shuffled_batches(n: int, batch_size: int, *, rng: np.random.Generator) -> list[np.ndarray]:
    """One epoch of a shuffled DataLoader: a permutation of ``n`` cut into batches (last one kept partial)."""
    perm = rng.permutation(n)
    return [perm[i:i + batch_size] for i in range(0, n, batch_size)]
