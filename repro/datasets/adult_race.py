"""UCI Adult restricted to White/Black with race as the sensitive attribute (thesis Tables 5.3–5.4).

This is the FairProjection variant of Adult (``DataLoader.load_data('adult')`` of Alghamdi et al.
2022, reused by the thesis' Part II code), not the sex-sensitive "purified" Adult of Part I:

1. ``adult.data`` (32,561 rows) and ``adult.test`` (16,281 rows; first line skipped, labels end in
   '.') concatenated: 48,842 rows; no row is dropped for '?' (the columns holding '?' are dropped);
2. drop ``fnlwgt, workclass, occupation, education, native-country``;
3. keep race ∈ {White, Black}: 46,447 rows; race White → 1, Black → 0 (sensitive attribute);
   gender Male → 1; income '>50K' → 1 (label);
4. one-hot ``marital-status`` (7 levels) and ``relationship`` (6 levels), categories in sorted order.

Features (20): age, education-num, capital-gain, capital-loss, hours-per-week, gender, race, the
13 one-hot columns. The reference code, under pandas ≥ 2, also one-hot encodes gender into two
redundant columns; one column carries the same information for a tree model.

Spec: seed-003-thesis.md §6.4 ("Adult loader"), §10 L7.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from repro.datasets.adult_raw import ADULT_COLUMNS, ADULT_SOURCES, read_uci_adult
from repro.datasets.entry import Dataset
from repro.datasets.tabular import TabularDataset

__all__ = ["DATASET", "ADULT_SOURCES", "COLUMNS", "load_adult_race", "load_adult_race_frame", "process_adult_race"]

#: Raw column names of this variant (the reference code calls ``sex`` ``gender``).
COLUMNS = tuple("gender" if c == "sex" else c for c in ADULT_COLUMNS)

_DROP = ["fnlwgt", "workclass", "occupation", "education", "native-country"]
_NUMERIC = ["age", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
_ONE_HOT = ["marital-status", "relationship"]


def process_adult_race(raw: pd.DataFrame) -> pd.DataFrame:
    """Apply steps 2–4 of the module docstring to the concatenated raw frame.

    Returns a frame with the numeric columns, ``gender``, ``race``, the one-hot columns (named
    ``<column>_<level>``) and the label ``income``.

    Spec: seed-003 §6.4.
    """
    df = raw.drop(columns=_DROP)
    df = df.loc[df["race"].isin(["White", "Black"])].copy()
    out = pd.DataFrame({c: pd.to_numeric(df[c]).astype(np.int64) for c in _NUMERIC}, index=df.index)
    out["gender"] = (df["gender"] == "Male").astype(np.int64)
    out["race"] = (df["race"] == "White").astype(np.int64)
    for col in _ONE_HOT:
        for level in sorted(df[col].unique()):
            out[f"{col}_{level}"] = (df[col] == level).astype(np.int64)
    out["income"] = df["income"].str.startswith(">").astype(np.int64)
    return out.reset_index(drop=True)


@functools.lru_cache(maxsize=1)
def load_adult_race_frame() -> pd.DataFrame:
    """The processed 46,447-row frame (cached in-process; raw files fetched via the registry)."""
    return process_adult_race(read_uci_adult(ADULT_SOURCES).rename(columns={"sex": "gender"}))


@functools.lru_cache(maxsize=1)
def load_adult_race() -> TabularDataset:
    """Adult (White/Black) as arrays: X (20 features incl. race), y = income > 50K, s = race (White = 1).

    Spec: seed-003 §6.4.
    """
    df = load_adult_race_frame()
    names = tuple(c for c in df.columns if c != "income")
    X = df[list(names)].to_numpy(dtype=float)
    X.setflags(write=False)
    return TabularDataset(
        name="adult-race", X=X, y=df["income"].to_numpy(dtype=np.int64), s=df["race"].to_numpy(dtype=np.int64),
        feature_names=names, numeric_columns=tuple(range(len(_NUMERIC))), group_names=("Black", "White"),
        description=__doc__.split("\n\n", 1)[1].split("Spec:", 1)[0].strip(),
        source="+".join(ADULT_SOURCES), s_column=names.index("race"))


DATASET = Dataset(
    name="adult-race", loader=load_adult_race, sources=ADULT_SOURCES,
    description="UCI Adult, White/Black: 46,447 x 20, A = race (thesis Tables 5.3-5.4, FairProjection's loader)",
)
