"""UCI Adult, "purified" as in the thesis's Part I experiments (and DP-FERMI's tabular runs).

Spec: seed-003-thesis.md §3.1 and §10 P5, P9; measured-anchors.md (thesis Part I).

Preprocessing (every choice; this is the *clean* reading, built from the canonical UCI files; the authors'
own file ``adult_original_purified.csv``, adult.data's complete rows written twice, is rebuilt by
:mod:`repro.datasets.authors_files`):

1. Read ``adult.data`` (32,561 rows) and ``adult.test`` (16,281 rows; first line skipped, trailing
   '.' of the labels removed) and **concatenate them** (train first, then test; file order).
2. Strip whitespace; **drop every row with a '?'** in any column → 45,222 rows.
3. Label Y = 1 iff income is ``>50K``.
4. Sensitive attribute A = ``sex``, fixed mapping **A = 1 for Male, A = 0 for Female** (spec P9; the
   authors' code derives the mapping from first-appearance order separately per split, which can
   flip it between train and test, see measured-anchors.md). ``sex`` is not a feature.
5. Features (d = 102): the 6 numeric columns age, fnlwgt, education-num, capital-gain,
   capital-loss, hours-per-week (raw values; standardize after the split with training statistics
   via :func:`repro.datasets.tabular.standardize`), then one-hot columns of workclass (7),
   education (16), marital-status (7), occupation (14), relationship (6), race (5) and
   native-country (41), categories in sorted order. ``race`` is a feature, not sensitive.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from repro.datasets.adult_raw import (
    ADULT_COLUMNS,
    ADULT_SOURCES,
    drop_missing,
    one_hot_sorted,
    read_uci_adult,
)
from repro.datasets.authors_files import yes_no
from repro.datasets.entry import AuthorsFile, Dataset
from repro.datasets.tabular import TabularDataset
from repro.errors import DataUnavailableError

__all__ = ["DATASET", "load_adult", "ADULT_COLUMNS", "NUMERIC", "CATEGORICAL", "N_ROWS", "N_FEATURES"]

NUMERIC = ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week")
CATEGORICAL = ("workclass", "education", "marital-status", "occupation", "relationship", "race",
               "native-country")
N_ROWS = 45_222
N_FEATURES = 102


@functools.lru_cache(maxsize=2)
def load_adult() -> TabularDataset:
    """UCI Adult (adult.data + adult.test), rows with '?' removed: 45,222 × 102, A = sex (Male = 1).

    Deterministic (no randomness); cached in-process.

    Raises
    ------
    DataUnavailableError
        If the raw files cannot be found, or the result does not have 45,222 rows and 102 features.

    Spec: seed-003 §3.1 (Adult row), P5, P9.
    """
    raw = drop_missing(read_uci_adult())
    y = raw["income"].str.rstrip(".").eq(">50K").to_numpy(dtype=np.int8)
    sex = raw["sex"]
    if set(sex.unique()) != {"Male", "Female"}:
        raise DataUnavailableError(f"adult: unexpected sex values {sorted(sex.unique())}; "
                                   "the raw files may be corrupt (run `repro data verify`).")
    s = sex.eq("Male").to_numpy(dtype=np.int8)
    onehot, onehot_names = one_hot_sorted(raw, CATEGORICAL)
    X = np.hstack([raw[list(NUMERIC)].astype(np.float64).to_numpy(), onehot])
    names = [*NUMERIC, *onehot_names]
    if X.shape != (N_ROWS, N_FEATURES):
        raise DataUnavailableError(
            f"adult: expected {N_ROWS} rows × {N_FEATURES} features after preprocessing, got "
            f"{X.shape[0]} × {X.shape[1]}; check the raw files with `repro data verify`.")
    return TabularDataset(
        name="adult", X=X, y=y, s=s, feature_names=tuple(names),
        numeric_columns=tuple(range(len(NUMERIC))), group_names=("Female", "Male"),
        description=__doc__.split("Preprocessing", 1)[1].strip(),
        source="adult-data+adult-test", canonical=True,
    )


def _authors_frame() -> tuple[pd.DataFrame, str]:
    """Issue 13 fact 1: adult.data without '?' rows, label column ``>50K`` Yes/No, the table twice."""
    df = drop_missing(read_uci_adult(("adult-data",)))
    df = df.rename(columns={"income": ">50K"})
    df[">50K"] = yes_no(df[">50K"].eq(">50K"))
    return pd.concat([df, df], ignore_index=True), "adult-data"


DATASET = Dataset(
    name="adult", loader=load_adult, n_rows=N_ROWS, sources=ADULT_SOURCES,
    description="UCI Adult, rows with '?' dropped: 45,222 x 102, A = sex (thesis Part I, DP-FERMI)",
    authors=AuthorsFile(
        filename="adult_original_purified.csv", git_blob="485326a3356768905aa53a101c2a772897bb1084",
        sources=("adult-data",), label=">50K", sensitive="sex", numeric=NUMERIC,
        group_names=("Female", "Male"), positive_group="Male", n_rows=60_324, n_features=102,
        canonical=True, copies=2, build=_authors_frame,
        recipe=(
            "adult.data only, values stripped, rows with '?' dropped (30,162), label >50K as Yes/No, "
            "the table written twice (60,324 rows); sex not a feature; 6 numeric columns z-scored, "
            "the 7 categoricals one-hot (102 features); A = 1 for Male.")),
)
