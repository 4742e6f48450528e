"""Adult reconstruction (Ding et al. 2021) processed as in the thesis' Part II: income > 26,000.

From the raw ``adult_reconstruction.csv`` (49,531 rows, continuous income): ``income = income >
26000``, ``gender = (gender == 'Male')``, keep [age, workclass, education, marital-status,
occupation, native-country, relationship, hours-per-week, gender, race, income], drop rows with
'?' in workclass/occupation/native-country (45,849 rows left), then label-encode every column in
sorted order (age and hours-per-week become rank codes; race: Amer-Indian-Eskimo=0,
Asian-Pac-Islander=1, Black=2, Other=3, White=4). This reproduces the reference pipeline's
``derived/db_adult_processed_26k.csv`` exactly (tested); that file is the fallback source when the
raw file cannot be obtained.

Spec: ../shared/specs/seed-003-thesis.md §6.1 (Exact files), L7.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from repro.datasets.entry import Dataset
from repro.datasets.tabular import load_raw_or_derived
from repro.errors import InvalidParameterError

__all__ = ["DATASET", "COLUMNS", "RAW_SOURCE", "DERIVED_SOURCE", "load_adult_reconstruction", "process_raw"]


RAW_SOURCE = "adult-reconstruction"
DERIVED_SOURCE = "db-adult-processed-26k"
COLUMNS = ["age", "workclass", "education", "marital-status", "occupation", "native-country", "relationship",
           "hours-per-week", "gender", "race", "income"]
INCOME_THRESHOLD = 26_000


def _label_encode(frame: pd.DataFrame) -> pd.DataFrame:
    """sklearn LabelEncoder semantics: codes are ranks among the sorted distinct values."""
    out = {}
    for col in frame.columns:
        values = frame[col].to_numpy()
        uniq = np.unique(values)
        out[col] = np.searchsorted(uniq, values).astype(np.int64)
    return pd.DataFrame(out, columns=frame.columns)


def process_raw(raw: pd.DataFrame) -> pd.DataFrame:
    """The §6.1 processing of the raw reconstruction table (pure function; tested against the reference file)."""
    missing = [c for c in [*COLUMNS] if c not in raw.columns]
    if missing:
        raise InvalidParameterError(f"adult_reconstruction.csv lacks columns {missing}; is it the right file?")
    df = raw[COLUMNS].copy()
    df["income"] = (df["income"] > INCOME_THRESHOLD).astype(np.int64)
    df["gender"] = (df["gender"] == "Male").astype(np.int64)
    bad = df[["workclass", "occupation", "native-country"]].astype(str).eq("?").any(axis=1)
    df = df.loc[~bad].dropna().reset_index(drop=True)
    for col in ["workclass", "education", "marital-status", "occupation", "native-country", "relationship", "race"]:
        df[col] = df[col].astype(str)
    return _label_encode(df)


@functools.lru_cache(maxsize=2)
def load_adult_reconstruction(source: str = "auto") -> pd.DataFrame:
    """The processed Adult-26k table (45,849 × 11, all label-encoded ints).

    Parameters
    ----------
    source
        ``"raw"`` (process ``adult_reconstruction.csv``), ``"derived"`` (read the reference
        pipeline's processed file from the mirror) or ``"auto"`` (raw if obtainable, else derived).
        ``frame.attrs["source"]`` names the file actually used. Do not mutate the returned frame
        (it is cached).

    Spec: seed-003 §6.1.
    """
    return load_raw_or_derived(source, raw=RAW_SOURCE, derived=DERIVED_SOURCE,
                               from_raw=lambda path: process_raw(pd.read_csv(path, skipinitialspace=True)), columns=COLUMNS)


DATASET = Dataset(
    name="adult-reconstruction", kind="frame", loader=load_adult_reconstruction, sources=(RAW_SOURCE, DERIVED_SOURCE),
    description="Adult reconstruction, income > 26,000: 45,849 x 11 label-encoded columns (thesis Part II LDP figures)",
)
