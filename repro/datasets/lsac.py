"""LSAC bar passage (Wightman 1998) processed as in the thesis' Part II (label ``pass_bar``).

From the raw ``bar_pass_prediction.csv`` (22,407 rows): drop every row with a missing value
(20,427 left), keep [fam_inc, gender, fulltime, race1, lsat, ugpa, pass_bar], ``race1 = (race1 !=
'black')``, ugpa rounded to the nearest 0.5 and lsat to an integer (numpy rounding, half to even),
then label-encode every column in sorted order (fam_inc 1..5 → 0..4, gender female=0/male=1). This
reproduces the reference pipeline's ``derived/db_LSAC.csv`` exactly (tested); that file is the
fallback source when the raw file cannot be obtained.

Spec: ../shared/specs/seed-003-thesis.md §6.1 (Exact files).
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from repro.datasets.adult_reconstruction import _label_encode
from repro.datasets.entry import Dataset
from repro.datasets.tabular import load_raw_or_derived
from repro.errors import InvalidParameterError

__all__ = ["DATASET", "COLUMNS", "RAW_SOURCE", "DERIVED_SOURCE", "load_lsac", "process_raw"]


RAW_SOURCE = "lsac-bar-pass"
DERIVED_SOURCE = "db-lsac"
COLUMNS = ["fam_inc", "gender", "fulltime", "race1", "lsat", "ugpa", "pass_bar"]


def process_raw(raw: pd.DataFrame) -> pd.DataFrame:
    """The §6.1 processing of ``bar_pass_prediction.csv`` (pure function; tested against the reference file)."""
    missing = [c for c in COLUMNS if c not in raw.columns]
    if missing:
        raise InvalidParameterError(f"bar_pass_prediction.csv lacks columns {missing}; is it the right file?")
    df = raw.dropna()[COLUMNS].copy()  # the reference drops rows with a NaN in ANY of the 39 columns
    df["race1"] = (df["race1"] != "black").astype(np.int64)
    df["ugpa"] = np.round(df["ugpa"].to_numpy(dtype=float) * 2.0) / 2.0
    df["lsat"] = np.round(df["lsat"].to_numpy(dtype=float))
    df["gender"] = df["gender"].astype(str)
    return _label_encode(df.reset_index(drop=True))


@functools.lru_cache(maxsize=2)
def load_lsac(source: str = "auto") -> pd.DataFrame:
    """The processed LSAC table (20,427 × 7, all label-encoded ints).

    ``source``: ``"raw"``, ``"derived"`` or ``"auto"`` (raw if obtainable, else the derived
    file); ``frame.attrs["source"]`` names the file used. Do not mutate the returned frame.
    Spec: seed-003 §6.1.
    """
    return load_raw_or_derived(source, raw=RAW_SOURCE, derived=DERIVED_SOURCE,
                               from_raw=lambda path: process_raw(pd.read_csv(path)), columns=COLUMNS)


DATASET = Dataset(
    name="lsac", kind="frame", loader=load_lsac, sources=(RAW_SOURCE, DERIVED_SOURCE),
    description="LSAC bar passage: 20,427 x 7 label-encoded columns (thesis Part II LDP figures)",
)
