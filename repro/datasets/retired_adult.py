"""Retired Adult (Ding et al. 2021 reconstruction) as in DP-FERMI's tabular experiments.

Spec: seed-004-dpfermi.md §7.1 (Retired Adult row) and §11 item 11.

Source: the registered raw file ``adult-reconstruction`` (``adult_reconstruction.csv``, 49,531 rows,
continuous ``income``). The authors' processed file ``adult_reconstruction_processed.csv`` is not
public, so this is a reconstruction.

Preprocessing (every choice):

1. **Drop every row with a '?'** (only workclass, occupation and native-country have them)
   → **45,849 rows** (3,682 dropped). This fits the released test-set size 11,462 = ¼ of 45,849
   (rounded), spec §7.1 [D].
2. Label Y = 1 iff ``income > 50,000`` (24.7 % positives; the raw income is continuous).
3. Sensitive attribute A = ``gender``, fixed mapping **A = 1 for Male, A = 0 for Female**
   (Female 32.4 %). ``gender`` is not a feature.
4. Features (d = **101**): the 5 numeric columns age, hours-per-week, education-num, capital-gain,
   capital-loss (raw; standardize after the split with training statistics) — the file has no
   fnlwgt — then one-hot columns of workclass (7), education (16), marital-status (7),
   relationship (6), race (5), native-country (41) and occupation (14), categories in sorted order.
   ``race`` is a feature, not sensitive.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from repro.datasets.adult_raw import drop_missing, one_hot_sorted
from repro.datasets.authors_files import yes_no
from repro.datasets.entry import AuthorsFile, Dataset
from repro.datasets.store import fetch
from repro.datasets.tabular import TabularDataset
from repro.errors import DataUnavailableError

__all__ = ["DATASET", "load_retired_adult", "NUMERIC", "CATEGORICAL", "N_ROWS", "N_FEATURES",
           "INCOME_THRESHOLD", "SOURCE"]

SOURCE = "adult-reconstruction"
NUMERIC = ("age", "hours-per-week", "education-num", "capital-gain", "capital-loss")
CATEGORICAL = ("workclass", "education", "marital-status", "relationship", "race", "native-country",
               "occupation")
INCOME_THRESHOLD = 50_000
N_ROWS = 45_849
N_FEATURES = 101


def build_retired_adult(raw: pd.DataFrame) -> TabularDataset:
    """Apply the module's preprocessing to the raw reconstruction table (pure function).

    Raises
    ------
    DataUnavailableError
        If columns are missing, ``gender`` has unexpected values, or the shape is not 45,849 × 101.

    Spec: seed-004 §7.1 (Retired Adult), §11 item 11.
    """
    needed = (*NUMERIC, *CATEGORICAL, "gender", "income")
    missing = [c for c in needed if c not in raw.columns]
    if missing:
        raise DataUnavailableError(f"retired adult: adult_reconstruction.csv lacks columns {missing}; "
                                   "check the file with `repro data verify`.")
    df = raw.copy()
    for col in (*CATEGORICAL, "gender"):
        df[col] = df[col].astype(str).str.strip()
    df = drop_missing(df, CATEGORICAL)
    gender = df["gender"]
    if set(gender.unique()) != {"Male", "Female"}:
        raise DataUnavailableError(f"retired adult: unexpected gender values {sorted(gender.unique())}; "
                                   "check the file with `repro data verify`.")
    y = (df["income"].astype(np.float64) > INCOME_THRESHOLD).to_numpy(dtype=np.int8)
    s = gender.eq("Male").to_numpy(dtype=np.int8)
    onehot, onehot_names = one_hot_sorted(df, CATEGORICAL)
    X = np.hstack([df[list(NUMERIC)].astype(np.float64).to_numpy(), onehot])
    names = [*NUMERIC, *onehot_names]
    if X.shape != (N_ROWS, N_FEATURES):
        raise DataUnavailableError(
            f"retired adult: expected {N_ROWS} rows × {N_FEATURES} features after preprocessing, got "
            f"{X.shape[0]} × {X.shape[1]}; check the raw file with `repro data verify`.")
    return TabularDataset(
        name="retired-adult", X=X, y=y, s=s, feature_names=tuple(names),
        numeric_columns=tuple(range(len(NUMERIC))), group_names=("Female", "Male"),
        description=__doc__.split("Preprocessing (every choice):", 1)[1].strip(),
        source=SOURCE, canonical=True,
    )


@functools.lru_cache(maxsize=1)
def load_retired_adult() -> TabularDataset:
    """Retired Adult: 45,849 × 101, Y = income > 50,000, A = gender (Male = 1).

    Deterministic; cached in-process (do not mutate the arrays).

    Spec: seed-004 §7.1 (Retired Adult row).
    """
    raw = pd.read_csv(fetch(SOURCE), skipinitialspace=True)
    return build_retired_adult(raw)


def _authors_frame() -> tuple[pd.DataFrame, str]:
    """Issue 13 fact 2: the reconstruction without '?' rows, income → Yes iff > 50,000."""
    df = drop_missing(pd.read_csv(fetch(SOURCE), dtype=str, na_filter=False))
    df["income"] = yes_no(df["income"].astype(np.float64) > INCOME_THRESHOLD)
    return df, SOURCE


DATASET = Dataset(
    name="retired-adult", loader=load_retired_adult, n_rows=N_ROWS, sources=(SOURCE,),
    description="Adult reconstruction (Ding et al. 2021), income > 50,000: 45,849 x 101, A = gender (DP-FERMI)",
    authors=AuthorsFile(
        filename="adult_reconstruction_processed.csv",
        git_blob="0544db76fb60d775601bbfb59e72c9b091f4beed", sources=(SOURCE,),
        label="income", sensitive="gender",
        numeric=("hours-per-week", "age", "capital-gain", "capital-loss", "education-num"),
        group_names=("Female", "Male"), positive_group="Male", n_rows=45_849, n_features=101,
        canonical=True, build=_authors_frame,
        recipe=(
            "adult_reconstruction.csv minus its rows with '?' (45,849), income -> Yes iff > 50,000; "
            "gender not a feature; 5 numeric columns z-scored, 7 categoricals one-hot (101 features);"
            " A = 1 for Male.")),
)
