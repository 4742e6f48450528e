"""The one train/test split of every study: :func:`split` applies a dataset entry's declared policy.

The policy has three parts, each declared, never chosen by a dataset's name:

* the **data mode's split** (the entry): ``authors`` = the authors' fixed ``df.sample(frac,
  random_state=100)`` (:func:`repro.datasets.authors_files.authors_split`; the generator is not used
  for it); ``clean`` = the entry's ``clean_split`` rule, ``random`` (a sorted ``round(f·n)`` / rest
  partition, :func:`repro.datasets.tabular.train_test_indices`) or ``shuffled`` (the generator's
  permutation, the first ``⌊f·n⌋`` for training, both parts in shuffled order);
* the **training fraction** ``f``: the entry's, unless the study passes its own;
* the **subsample rule** (the study's, ``subsample_of``), used when ``subsample`` > 0:

  ``rows`` (thesis Part I, UTKFace)
      ``subsample`` rows in all. ``random``: that many rows drawn first (sorted, :attr:`Parts.rows`),
      then split; ``shuffled``: the first ``subsample`` of the permutation, then split; ``authors``:
      the fixed split kept, ``k = max(round(subsample·|train|/n), 2)`` training rows (in draw order) and
      ``max(subsample − k, 2)`` test rows (sorted) drawn from its two parts.
  ``train`` (DP-FERMI tabular figures)
      after the split, ``subsample`` training rows and ``min(|test|, max(subsample // 3, 200))`` test
      rows (both sorted), when ``subsample`` < ``|train|``.

The generator is drawn from in exactly this order (subsample first for ``rows``, split first for
``train``), so results equal those of the three per-study policies this replaced (tested against a
frozen copy of them).

Spec: seed-003-thesis.md §2.7 step 1; seed-004-dpfermi.md §7.1 (3:1 split; UTKFace); issue 13; issue 36.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from repro.datasets.entry import Dataset
from repro.datasets.tabular import train_test_indices
from repro.errors import InvalidParameterError

__all__ = ["Parts", "SUBSAMPLE_RULES", "split", "split_sizes"]

#: how ``subsample`` counts: ``rows`` in all, or ``train`` training rows (see the module docstring)
SUBSAMPLE_RULES = ("rows", "train")


@dataclass(frozen=True)
class Parts:
    """One split: ``train`` and ``test`` row indices; ``rows`` (or None) the rows kept before splitting,
    which ``train`` and ``test`` then index into (:meth:`take` cuts a dataset to them)."""

    train: np.ndarray
    test: np.ndarray
    rows: np.ndarray | None = None

    def take(self, data):
        """``data`` (a :class:`repro.datasets.tabular.TabularDataset`) cut to :attr:`rows` (itself when None)."""
        if self.rows is None:
            return data
        return dataclasses.replace(data, X=data.X[self.rows], y=data.y[self.rows], s=data.s[self.rows])


def split(dataset: Dataset, data: str, *, n: int, rng: np.random.Generator | None = None, subsample: int = 0,
          subsample_of: str = "rows", train_fraction: float | None = None) -> Parts:
    """The train/test split of ``n`` rows of ``dataset`` in data mode ``data`` (see the module docstring).

    ``rng`` is required unless the split is the authors' and there is no subsample.
    """
    dataset.check_mode(data)
    if subsample_of not in SUBSAMPLE_RULES:
        raise InvalidParameterError(f"subsample_of must be one of {', '.join(SUBSAMPLE_RULES)}; got {subsample_of!r}.")
    fraction = dataset.train_fraction if train_fraction is None else float(train_fraction)
    if not 0 < fraction < 1:
        raise InvalidParameterError(f"train_fraction must lie in (0, 1); got {fraction}. Use e.g. 0.75.")
    sub = int(subsample or 0)
    if sub < 0:
        raise InvalidParameterError(f"subsample must be 0 (all rows) or positive; got {sub}.")
    rule = "authors" if data == "authors" else dataset.clean_split
    if rng is None and (rule != "authors" or sub):
        raise InvalidParameterError("this split draws at random: pass rng=ctx.rng('split', ...).")
    rows_rule = subsample_of == "rows" and sub > 0
    if rule == "shuffled":
        perm = rng.permutation(n)
        if rows_rule:
            if sub > n:
                raise InvalidParameterError(f"subsample must be 0 (all) or in [1, {n}]; got {sub}.")
            perm = perm[:sub]
        n_train = int(math.floor(fraction * perm.size))
        parts = Parts(perm[:n_train], perm[n_train:])
    elif rule == "authors":
        from repro.datasets.authors_files import authors_split

        train, test = authors_split(n, fraction)
        if rows_rule and sub < n:   # a random part of each side, the authors' split kept
            k = max(int(round(sub * train.size / n)), 2)
            train = rng.choice(train, size=k, replace=False)
            test = np.sort(rng.choice(test, size=max(sub - k, 2), replace=False))
        parts = Parts(train, test)
    else:
        rows = None
        if rows_rule and sub < n:   # a random part of the rows, then the split
            rows = np.sort(rng.choice(n, size=sub, replace=False))
        train, test = train_test_indices(n if rows is None else rows.size, fraction, rng=rng)
        parts = Parts(train, test, rows)
    if subsample_of == "train" and 0 < sub < parts.train.size:
        train = np.sort(rng.choice(parts.train, size=sub, replace=False))
        test = np.sort(rng.choice(parts.test, size=min(parts.test.size, max(sub // 3, 200)), replace=False))
        parts = Parts(train, test, parts.rows)
    return parts


def split_sizes(dataset: Dataset, data: str, *, n: int, subsample: int = 0, train_fraction: float | None = None
                ) -> tuple[int, int]:
    """(training rows, test rows) that :func:`split` gives on ``n`` rows with ``subsample_of="rows"``, computed
    without drawing (the notes' derived numbers; tested against :func:`split`)."""
    dataset.check_mode(data)
    fraction = dataset.train_fraction if train_fraction is None else float(train_fraction)
    sub = int(subsample or 0)
    rule = "authors" if data == "authors" else dataset.clean_split
    if rule == "authors":
        n_train = round(fraction * n)
        if 0 < sub < n:
            k = max(int(round(sub * n_train / n)), 2)
            return k, max(sub - k, 2)
        return n_train, n - n_train
    m = min(sub, n) if sub > 0 else n
    n_train = int(math.floor(fraction * m)) if rule == "shuffled" else int(round(fraction * m))
    return n_train, m - n_train
