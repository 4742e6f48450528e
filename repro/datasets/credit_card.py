"""UCI Default of Credit Card Clients (Taiwan, 30,000 rows) as in the thesis's Part I experiments.

Spec: seed-003-thesis.md §3.1 and §10 P5, P9.

Source file: the canonical Excel file (``credit-card-xls``, read with pandas + xlrd) when it is
already in the cache or the mirror, else the project's derived tab-separated copy
(``credit-card-tsv``: same values, not the canonical bytes), else a download of the canonical file.
``TabularDataset.canonical`` / ``.source`` record which one was used; results label derived data.

Preprocessing (a reconstruction; the thesis's ``credit-card-defaulters_processed.csv`` is not public):

1. Drop ``ID``. Label Y = ``default payment next month`` (1 = default).
2. Sensitive attribute A = ``SEX``, fixed mapping **A = 1 for SEX = 1 (male), A = 0 for SEX = 2
   (female)** (spec P9). ``SEX`` is not a feature.
3. Undocumented codes merged (spec §3.1 guess, which gives exactly 85 features):
   EDUCATION 0, 5, 6 → 4 ("others"; 4 levels), MARRIAGE 0 → 3 ("others"; 3 levels).
4. Features (d = 85): the 14 numeric columns LIMIT_BAL, AGE, BILL_AMT1–6, PAY_AMT1–6 (raw; standardize
   after the split with training statistics), then one-hot columns of EDUCATION (4), MARRIAGE (3),
   PAY_0, PAY_2, PAY_3, PAY_4 (11 levels each), PAY_5, PAY_6 (10 levels each), in sorted order.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from repro.datasets.authors_files import yes_no
from repro.datasets.entry import AuthorsFile, Dataset
from repro.datasets.sources import get_source
from repro.datasets.store import cached_path, fetch, is_obtainable, mirror_path
from repro.datasets.tabular import TabularDataset
from repro.errors import DataUnavailableError

__all__ = ["DATASET", "load_credit_card", "NUMERIC", "CATEGORICAL", "N_ROWS", "N_FEATURES", "LABEL"]

LABEL = "default payment next month"
NUMERIC = ("LIMIT_BAL", "AGE", "BILL_AMT1", "BILL_AMT2", "BILL_AMT3", "BILL_AMT4", "BILL_AMT5",
           "BILL_AMT6", "PAY_AMT1", "PAY_AMT2", "PAY_AMT3", "PAY_AMT4", "PAY_AMT5", "PAY_AMT6")
CATEGORICAL = ("EDUCATION", "MARRIAGE", "PAY_0", "PAY_2", "PAY_3", "PAY_4", "PAY_5", "PAY_6")
N_ROWS = 30_000
N_FEATURES = 85


def _present(name: str) -> bool:
    mirror = mirror_path(name)
    return cached_path(name).is_file() or (mirror is not None and mirror.is_file())


def _read_raw() -> tuple[pd.DataFrame, str, bool]:
    """(frame with the xls's second header row as columns, source name, canonical?)."""
    if _present("credit-card-xls") or not is_obtainable("credit-card-tsv"):
        try:
            path = fetch("credit-card-xls")
            return pd.read_excel(path, header=1, engine="xlrd"), "credit-card-xls", True
        except (DataUnavailableError, ImportError, ValueError):
            if not is_obtainable("credit-card-tsv"):
                raise
    path = fetch("credit-card-tsv")
    return pd.read_csv(path, sep="\t"), "credit-card-tsv", get_source("credit-card-tsv").canonical


@functools.lru_cache(maxsize=2)
def load_credit_card() -> TabularDataset:
    """UCI credit-card default: 30,000 × 85, A = SEX (male = 1), Y = default next month.

    Deterministic; cached in-process. ``.source`` names the file used (``credit-card-xls`` or the
    derived ``credit-card-tsv``) and ``.canonical`` is False for the derived copy.

    Raises
    ------
    DataUnavailableError
        If no source file is available, or the preprocessing does not give 30,000 × 85.

    Spec: seed-003 §3.1 (Credit Card row), P5, P9.
    """
    raw, source, canonical = _read_raw()
    raw = raw.rename(columns=lambda c: str(c).strip())
    missing = [c for c in (*NUMERIC, *CATEGORICAL, "SEX", LABEL) if c not in raw.columns]
    if missing:
        raise DataUnavailableError(f"credit card ({source}): missing columns {missing}; "
                                   "check the file with `repro data verify`.")
    raw = raw.dropna(how="all")
    y = raw[LABEL].astype(int).to_numpy(dtype=np.int8)
    s = (raw["SEX"].astype(int) == 1).to_numpy(dtype=np.int8)
    cat = raw[list(CATEGORICAL)].astype(int).copy()
    cat["EDUCATION"] = cat["EDUCATION"].where(~cat["EDUCATION"].isin([0, 5, 6]), 4)
    cat["MARRIAGE"] = cat["MARRIAGE"].where(cat["MARRIAGE"] != 0, 3)
    blocks = [raw[list(NUMERIC)].astype(np.float64).to_numpy()]
    names = list(NUMERIC)
    for col in CATEGORICAL:
        levels = np.sort(cat[col].unique())
        blocks.append((cat[col].to_numpy()[:, None] == levels[None, :]).astype(np.float64))
        names += [f"{col}={v}" for v in levels]
    X = np.hstack(blocks)
    if X.shape != (N_ROWS, N_FEATURES):
        raise DataUnavailableError(
            f"credit card ({source}): expected {N_ROWS} rows × {N_FEATURES} features, got "
            f"{X.shape[0]} × {X.shape[1]}; check the file with `repro data verify`.")
    desc = __doc__.split("Preprocessing", 1)[1].strip()
    if not canonical:
        desc = f"DERIVED SOURCE ({source}: tab-separated copy, not the canonical xls). " + desc
    return TabularDataset(
        name="credit-card", X=X, y=y, s=s, feature_names=tuple(names),
        numeric_columns=tuple(range(len(NUMERIC))), group_names=("female (SEX=2)", "male (SEX=1)"),
        description=desc, source=source, canonical=canonical,
    )


def _authors_frame() -> tuple[pd.DataFrame, str]:
    """Issue 13 fact 4 (inferred): ID dropped, EDUCATION {0,5,6} → 4, MARRIAGE 0 → 3, label Yes/No."""
    raw, source, _ = _read_raw()
    df = raw.rename(columns=lambda c: str(c).strip()).dropna(how="all").drop(columns=["ID"])
    df = df.astype(np.int64)
    df["EDUCATION"] = df["EDUCATION"].where(~df["EDUCATION"].isin([0, 5, 6]), 4)
    df["MARRIAGE"] = df["MARRIAGE"].where(df["MARRIAGE"] != 0, 3)
    df[LABEL] = yes_no(df[LABEL] == 1)
    return df.reset_index(drop=True), source


DATASET = Dataset(
    name="credit-card", loader=load_credit_card, n_rows=N_ROWS, sources=("credit-card-xls", "credit-card-tsv"),
    description="UCI Default of Credit Card Clients: 30,000 x 85, A = SEX (thesis Part I, DP-FERMI)",
    authors=AuthorsFile(
        filename="credit-card-defaulters_processed.csv",
        git_blob="8f48cba56e346e65b6acebdb3060dd4c6376cfe0", sources=("credit-card-tsv",),
        label=LABEL, sensitive="SEX",
        numeric=("LIMIT_BAL", "AGE", "BILL_AMT1", "BILL_AMT2", "BILL_AMT3", "BILL_AMT4", "BILL_AMT5",
                 "BILL_AMT6", "PAY_AMT1", "PAY_AMT2", "PAY_AMT3", "PAY_AMT4", "PAY_AMT5", "PAY_AMT6"),
        group_names=("female (SEX=2)", "male (SEX=1)"), positive_group="1", n_rows=30_000,
        n_features=85, canonical=False, build=_authors_frame,
        recipe=(
            "credit-card loader's source (derived TSV), ID dropped, EDUCATION {0,5,6} -> 4, MARRIAGE "
            "0 -> 3, label default as Yes/No; SEX not a feature; 14 numeric columns z-scored, "
            "EDUCATION, MARRIAGE, PAY_0, PAY_2-PAY_6 one-hot (85 features); A = 1 for SEX = 1 (male).")),
)
