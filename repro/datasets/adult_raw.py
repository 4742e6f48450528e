"""The one raw UCI Adult reader and the one-hot/missing-value helpers every Adult variant shares.

Spec: seed-003-thesis.md §3.1 (Part I "purified" Adult) and §6.4 (FairProjection's Adult);
seed-004-dpfermi.md §7.1 (Retired Adult uses the same encoding on its own file).

``adult.data`` has no header; ``adult.test`` starts with a ``|1x3 Cross validator`` line and its
labels end in ``.``. :func:`read_uci_adult` returns both concatenated (train first, file order) as
stripped strings with the canonical column names, labels left as written.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from repro.datasets.store import fetch

__all__ = ["ADULT_COLUMNS", "ADULT_SOURCES", "read_uci_adult", "drop_missing", "one_hot_sorted"]

#: Registered raw files (repro.datasets.sources): the UCI training and test files.
ADULT_SOURCES = ("adult-data", "adult-test")

ADULT_COLUMNS = ("age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
                 "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
                 "hours-per-week", "native-country", "income")


def _read(path: object, skiprows: int) -> pd.DataFrame:
    df = pd.read_csv(path, header=None, names=list(ADULT_COLUMNS), skiprows=skiprows,
                     skipinitialspace=True, dtype=str, na_filter=False)
    df = df.apply(lambda c: c.str.strip())
    return df[df["age"] != ""]  # trailing blank lines


def read_uci_adult(parts: Sequence[str] = ADULT_SOURCES) -> pd.DataFrame:
    """``adult.data`` then ``adult.test`` (first line skipped), every value a stripped string.

    48,842 rows on the canonical files; nothing is dropped (``?`` stays as a value). Each file's
    bytes are fetched (and verified) through the registry.
    """
    frames = [_read(fetch(name), 1 if name == "adult-test" else 0) for name in parts]
    return pd.concat(frames, ignore_index=True)


def drop_missing(df: pd.DataFrame, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """Rows of ``df`` with no ``?`` in ``columns`` (all columns by default), index reset."""
    cols = list(df.columns if columns is None else columns)
    return df[~df[cols].eq("?").any(axis=1)].reset_index(drop=True)


def one_hot_sorted(df: pd.DataFrame, columns: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """0/1 indicator columns of each categorical column, categories in sorted order.

    Returns the (n, Σ levels) float64 block and the names ``<column>=<level>``.
    """
    blocks, names = [], []
    for col in columns:
        cats = sorted(df[col].unique())
        codes = pd.Categorical(df[col], categories=cats).codes
        blocks.append((codes[:, None] == np.arange(len(cats))[None, :]).astype(np.float64))
        names += [f"{col}={c}" for c in cats]
    return (np.hstack(blocks) if blocks else np.zeros((len(df), 0))), names
