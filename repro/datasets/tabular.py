"""The one container and the split/standardize helpers of every tabular fairness dataset.

Spec: seed-003-thesis.md §2.7 (75/25 train/test split, 2/3–1/3 split of the training part,
standardization with training statistics only) and §3.1 (datasets).

A :class:`TabularDataset` holds the *unstandardized* feature matrix (one-hot columns are 0/1, the
numeric columns are raw values) with the indices of the numeric columns. Standardization happens
after the split, with the training part's mean and standard deviation only
(:func:`standardize`), exactly as the thesis code does (pandas ``std``, i.e. ddof = 1).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from repro.errors import InvalidParameterError

__all__ = ["TabularDataset", "Split", "load_raw_or_derived", "train_test_indices", "split_indices",
           "split_training_part", "standardize"]


@dataclass(frozen=True)
class TabularDataset:
    """A binary-label, binary-group tabular dataset.

    Attributes
    ----------
    name : str
        Short id (``adult``, ``credit-card``).
    X : ndarray of shape (n, d), float64
        Non-sensitive features, numeric columns unstandardized, categoricals one-hot (0/1).
    y : ndarray of shape (n,), integer
        Binary label (1 = positive class).
    s : ndarray of shape (n,), integer
        Binary sensitive attribute A (fixed mapping, documented by the loader).
    feature_names : tuple of str
        Names of the d columns of ``X``.
    numeric_columns : tuple of int
        Indices of the columns to standardize (with training statistics).
    group_names : tuple of str
        ``group_names[a]`` is the raw value encoded as A = a.
    description : str
        Every preprocessing choice, in words.
    source : str
        Registered raw source name(s) used.
    canonical : bool
        False when a derived (non-canonical) substitute file was used; results must say so.
    s_column : int or None
        Index of A in ``X`` when the sensitive attribute is also a feature (FairProjection's
        tables: a mechanism overwrites that column), else None.
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    s: np.ndarray
    feature_names: tuple[str, ...]
    numeric_columns: tuple[int, ...]
    group_names: tuple[str, str]
    description: str
    source: str
    canonical: bool = True
    extra: dict = field(default_factory=dict, compare=False)
    s_column: int | None = None

    @property
    def n(self) -> int:
        return int(self.y.shape[0])

    @property
    def d(self) -> int:
        return int(self.X.shape[1])


@dataclass(frozen=True)
class Split:
    """Index arrays of one split: ``train`` (DP-SGD training), ``post`` (post-processing), ``test``.

    ``full_train`` is ``train`` ∪ ``post`` (the 75 % part, used whole by DP-FERMI).
    """

    full_train: np.ndarray
    train: np.ndarray
    post: np.ndarray
    test: np.ndarray


def train_test_indices(n: int, train_fraction: float, *, rng: np.random.Generator
                       ) -> tuple[np.ndarray, np.ndarray]:
    """A random ``round(train_fraction·n)`` / rest partition of ``range(n)``.

    Spec: seed-003 §2.7 step 1 (``df.sample(frac=0.75)``; the rest is the test set).
    """
    if not 0 < train_fraction < 1:
        raise InvalidParameterError(
            f"train_fraction must lie in (0, 1); got {train_fraction}. Use e.g. 0.75.")
    perm = rng.permutation(n)
    n_train = int(round(train_fraction * n))
    return np.sort(perm[:n_train]), np.sort(perm[n_train:])


def split_indices(n: int, *, rng: np.random.Generator, train_fraction: float = 0.75,
                  fit_fraction: float = 2 / 3) -> Split:
    """75/25 train/test split, then the training part split 2/3 (fit) and 1/3 (post-processing).

    Spec: seed-003 §2.7 steps 1–2 (``random_split(train, [int(2/3·m), m − int(2/3·m)])``).
    """
    full_train, test = train_test_indices(n, train_fraction, rng=rng)
    return split_training_part(full_train, test, rng=rng, fit_fraction=fit_fraction)


def split_training_part(full_train: np.ndarray, test: np.ndarray, *, rng: np.random.Generator,
                        fit_fraction: float = 2 / 3) -> Split:
    """Split a given training part ``int(fit_fraction·m)`` (fit) / rest (post-processing), at random.

    Spec: seed-003 §2.7 step 2 (``random_split(train, [int(2/3·m), m − int(2/3·m)])``).
    """
    if not 0 < fit_fraction < 1:
        raise InvalidParameterError(
            f"fit_fraction must lie in (0, 1); got {fit_fraction}. Use e.g. 2/3.")
    m = full_train.size
    n_fit = int(fit_fraction * m)
    perm = rng.permutation(m)
    return Split(full_train=full_train, train=np.sort(full_train[perm[:n_fit]]),
                 post=np.sort(full_train[perm[n_fit:]]), test=test)


def standardize(X: np.ndarray, train_rows: np.ndarray, columns: tuple[int, ...] | list[int]
                ) -> np.ndarray:
    """Copy of ``X`` with ``columns`` standardized by the mean and std (ddof=1) of ``train_rows``.

    Only the training rows' statistics are used, so no test information leaks into the features.
    Spec: seed-003 §2.7 step 1 (``cols_to_norm`` with train mean/std).
    """
    cols = np.asarray(columns, dtype=int)
    out = np.array(X, dtype=np.float64, copy=True)
    if cols.size == 0:
        return out
    ref = out[np.asarray(train_rows)][:, cols]
    mean = ref.mean(axis=0)
    std = ref.std(axis=0, ddof=1)
    if np.any(~(std > 0)):
        bad = [int(c) for c, sd in zip(cols, std, strict=True) if not sd > 0]
        raise InvalidParameterError(
            f"cannot standardize columns {bad}: zero variance on the training rows; "
            "drop them or use a larger training set.")
    out[:, cols] = (out[:, cols] - mean) / std
    return out


def load_raw_or_derived(source: str, *, raw: str, derived: str, from_raw: Callable[[Path], pd.DataFrame],
                        columns: Sequence[str]) -> pd.DataFrame:
    """Build a processed frame from the raw file, or fall back to the mirror's derived copy.

    ``source`` is ``"raw"``, ``"derived"`` or ``"auto"`` (raw when obtainable, else derived, with
    a logged warning). The derived file's integer-coded ``columns`` are read as they are. The
    frame's ``attrs["source"]`` records which file was used (derived use is labelled).
    """
    from repro.datasets.sources import get_source
    from repro.datasets.store import fetch, is_obtainable

    if source not in ("auto", "raw", "derived"):
        raise InvalidParameterError(f"source must be 'auto', 'raw' or 'derived'; got {source!r}")
    if source == "raw" or (source == "auto" and is_obtainable(raw)):
        frame = from_raw(fetch(raw))
        frame.attrs["source"] = raw
        return frame
    if source == "auto":
        logging.getLogger(__name__).warning("%s unavailable: using the derived file %s",
                                            get_source(raw).filename, derived)
    frame = pd.read_csv(fetch(derived))[list(columns)].astype(np.int64)
    frame.attrs["source"] = derived + " (derived fallback)"
    return frame
