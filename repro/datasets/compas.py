"""ProPublica COMPAS two-year recidivism, as used by FairProjection and the thesis' Tables 5.1–5.2.

Steps (spec §6.4 "COMPAS loader", following ProPublica's analysis and the FairProjection
``DataLoader.load_data('compas')``):

1. read ``compas-scores-two-years.csv`` (registered source ``compas-two-years``), 7,214 rows;
2. keep ``age, c_charge_degree, race, sex, priors_count, days_b_screening_arrest, is_recid,
   c_jail_in, c_jail_out``;
3. keep |days_b_screening_arrest| ≤ 30 (rows with a missing value are dropped, as the comparison
   with NaN is false), ``is_recid != -1`` and ``c_charge_degree != 'O'``: 6,172 rows;
4. ``length_of_stay = (c_jail_out − c_jail_in).days``; drop the jail dates and
   ``days_b_screening_arrest``;
5. keep African-American and Caucasian: 5,278 rows; ``race`` Caucasian → 1, African-American → 0
   (the sensitive attribute); ``sex`` Male → 1 renamed ``gender``; ``c_charge_degree`` F → 1,
   M → −1; label ``is_recid``.

Spec: seed-003-thesis.md §6.4.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from repro.datasets.entry import Dataset
from repro.datasets.store import fetch
from repro.datasets.tabular import TabularDataset

__all__ = ["DATASET", "COMPAS_SOURCE", "FEATURES", "filter_compas", "load_compas", "load_compas_frame",
           "standard_filter"]

#: Registered raw file (repro.datasets.sources).
COMPAS_SOURCE = "compas-two-years"

#: Feature columns in model order (the sensitive attribute ``race`` is included as a feature,
#: as in the reference code's ``use_protected=True``).
FEATURES = ("age", "c_charge_degree", "race", "gender", "priors_count", "length_of_stay")

_RAW_COLUMNS = ["age", "c_charge_degree", "race", "sex", "priors_count", "days_b_screening_arrest",
                "is_recid", "c_jail_in", "c_jail_out"]


def filter_compas(raw: pd.DataFrame) -> pd.DataFrame:
    """ProPublica's standard filters and the FairProjection preprocessing, as a frame.

    Returns the 5,278-row frame (on the canonical file) with columns ``age, c_charge_degree, race,
    gender, priors_count, is_recid, length_of_stay``; :func:`standard_filter` gives the 6,172-row
    intermediate (all races).

    Spec: seed-003 §6.4 (COMPAS loader).
    """
    df = standard_filter(raw)
    df = df.loc[df["race"].isin(["African-American", "Caucasian"])].copy()
    df["race"] = (df["race"] == "Caucasian").astype(np.int64)
    df["gender"] = (df.pop("sex") == "Male").astype(np.int64)
    df["c_charge_degree"] = np.where(df["c_charge_degree"] == "F", 1, -1).astype(np.int64)
    df = df[["age", "c_charge_degree", "race", "gender", "priors_count", "is_recid", "length_of_stay"]]
    return df.reset_index(drop=True)


def standard_filter(raw: pd.DataFrame) -> pd.DataFrame:
    """ProPublica's filters (|days_b_screening_arrest| ≤ 30, is_recid ≠ −1, c_charge_degree ≠ 'O').

    Also adds ``length_of_stay`` (days between ``c_jail_in`` and ``c_jail_out``) and drops the jail
    dates and ``days_b_screening_arrest``. 6,172 rows on the canonical file, all races.
    """
    missing = [c for c in _RAW_COLUMNS if c not in raw.columns]
    if missing:
        from repro.errors import ReproError

        raise ReproError(f"COMPAS file lacks columns {missing}; expected ProPublica's compas-scores-two-years.csv")
    df = raw[_RAW_COLUMNS].copy()
    keep = (df["days_b_screening_arrest"] <= 30) & (df["days_b_screening_arrest"] >= -30)
    keep &= df["is_recid"] != -1
    keep &= df["c_charge_degree"] != "O"
    df = df.loc[keep].copy()
    stay = pd.to_datetime(df["c_jail_out"]) - pd.to_datetime(df["c_jail_in"])
    df["length_of_stay"] = stay.dt.days.astype(np.int64)
    return df.drop(columns=["c_jail_in", "c_jail_out", "days_b_screening_arrest"])


@functools.lru_cache(maxsize=1)
def load_compas_frame() -> pd.DataFrame:
    """The processed 5,278-row COMPAS frame (cached in-process; fetched via the registry)."""
    raw = pd.read_csv(fetch(COMPAS_SOURCE), index_col=0)
    return filter_compas(raw)


@functools.lru_cache(maxsize=1)
def load_compas() -> TabularDataset:
    """COMPAS as arrays: X (features of :data:`FEATURES`), y = is_recid, s = race (Caucasian = 1).

    Spec: seed-003 §6.4.
    """
    df = load_compas_frame()
    X = df[list(FEATURES)].to_numpy(dtype=float)
    X.setflags(write=False)
    y = df["is_recid"].to_numpy(dtype=np.int64)
    s = df["race"].to_numpy(dtype=np.int64)
    return TabularDataset(
        name="compas", X=X, y=y, s=s, feature_names=FEATURES,
        numeric_columns=tuple(FEATURES.index(c) for c in ("age", "priors_count", "length_of_stay")),
        group_names=("African-American", "Caucasian"),
        description=__doc__.split("\n\n", 1)[1].split("Spec:", 1)[0].strip(),
        source=COMPAS_SOURCE, s_column=FEATURES.index("race"))


DATASET = Dataset(
    name="compas", loader=load_compas, sources=(COMPAS_SOURCE,),
    description="ProPublica COMPAS two-year recidivism: 5,278 x 6, A = race (thesis Tables 5.1-5.2)",
)
