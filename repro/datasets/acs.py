"""ACS PUMS person data for the fair hiring bandit: the raw-file loaders and the shared preprocessing.

Three sources of ACS-schema frames (the bandit turns them into environments,
:mod:`repro.bandits.environments`):

* :func:`load_acs_frames`: the faithful pipeline's PUMS person files through folktables (a scaler year and
  a pool year, all states by default), read from ``<acs_dir>/<year>/1-Year/psam_p<FIPS>.csv``;
* :func:`load_acs_ca_extract_frame`: the mirror's surrogate ``derived/acs_income_ca_2018_test.csv``
  (registered source ``acs-income-ca-2018-test``), whose PINCP is only the indicator PINCP > 50,000;
* :func:`synthetic_acs_frame`: an ACS-shaped generator for tests and smoke runs.

Spec: seed-001-bandit.md §6 (pipeline steps 1–4, data availability risk), §10 D13.
"""

from __future__ import annotations

import os
import random
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from repro.datasets.entry import Dataset
from repro.errors import DataUnavailableError, InvalidParameterError

__all__ = ["DATASET", "ACS_COLUMNS", "ACS_FEATURES", "CA_EXTRACT_SOURCE", "acs_files_present", "default_acs_dir",
           "load_acs_ca_extract_frame", "load_acs_frames", "preprocess_acs_frame", "synthetic_acs_frame"]

ACS_COLUMNS = ("AGEP", "COW", "SCHL", "MAR", "POBP", "RELP", "OCCP", "WKHP", "SEX", "RAC1P", "PINCP")
ACS_FEATURES = ("AGEP", "COW", "SCHL", *(f"MAR_{i}" for i in range(1, 6)), "OCCP", "POBP", "RELP", "WKHP",
                "SEX_1", "SEX_2", *(f"RAC1P_{i}" for i in range(1, 10)))
CA_EXTRACT_SOURCE = "acs-income-ca-2018-test"


def preprocess_acs_frame(frame: pd.DataFrame, *, income_filter: bool = True) -> pd.DataFrame:
    """The Adult-like filter and one-hot encoding of the reference pipeline.

    Keeps AGEP > 16, WKHP > 0, PWGTP ≥ 1 (if present) and PINCP > 100 (if ``income_filter``);
    one-hot encodes MAR (1..5), SEX (1..2) and RAC1P (1..9) with fixed categories and keeps RAC1P
    for the group; NaN features become 0 (the reference's ``nan_to_num`` quirk).

    Spec: seed-001 §6 steps 2–4.
    """
    missing = [c for c in ACS_COLUMNS if c not in frame.columns]
    if missing:
        raise InvalidParameterError(f"ACS frame lacks columns {missing}; the pipeline needs {list(ACS_COLUMNS)}.")
    df = frame
    keep = (df["AGEP"] > 16) & (df["WKHP"] > 0)
    if "PWGTP" in df.columns:
        keep &= df["PWGTP"] >= 1
    if income_filter:
        keep &= df["PINCP"].astype(float) > 100
    df = df.loc[keep, list(ACS_COLUMNS)].copy()
    out = pd.DataFrame(index=df.index)
    for col in ("AGEP", "COW", "SCHL"):
        out[col] = df[col].astype(float)
    for i in range(1, 6):
        out[f"MAR_{i}"] = (df["MAR"] == i).astype(float)
    for col in ("OCCP", "POBP", "RELP", "WKHP"):
        out[col] = df[col].astype(float)
    for i in (1, 2):
        out[f"SEX_{i}"] = (df["SEX"] == i).astype(float)
    for i in range(1, 10):
        out[f"RAC1P_{i}"] = (df["RAC1P"] == i).astype(float)
    out = out.fillna(0.0)
    out["group"] = df["RAC1P"].astype(int)
    out["income"] = df["PINCP"].astype(float)
    return out


_SYN_GROUPS = (1, 2, 6, 8)


def synthetic_acs_frame(n_per_group: int, *, rng: np.random.Generator) -> pd.DataFrame:
    """Raw ACS-schema rows with group-dependent distributions (groups RAC1P 1, 2, 6, 8).

    Education, hours, age, occupation and sex mix differ by group and log-income is linear in them
    plus a group effect and noise, so groups differ in reward distribution (spec D13) and OFUL's
    group bias can appear.

    Spec: seed-001 §6 "Data availability risk" plan (b), §10 D13.
    """
    frames = []
    schl_mean = {1: 19.0, 2: 17.5, 6: 20.5, 8: 16.0}
    hours_mean = {1: 39.0, 2: 37.0, 6: 40.0, 8: 38.0}
    effect = {1: 0.0, 2: -0.25, 6: 0.2, 8: -0.35}
    for code in _SYN_GROUPS:
        n = n_per_group
        age = np.clip(rng.normal(42, 14, n), 17, 94).round()
        schl = np.clip(rng.normal(schl_mean[code], 3.5, n), 1, 24).round()
        wkhp = np.clip(rng.normal(hours_mean[code], 11, n), 1, 99).round()
        sex = rng.integers(1, 3, n)
        mar = rng.choice([1, 2, 3, 4, 5], size=n, p=[0.5, 0.06, 0.1, 0.02, 0.32])
        cow = rng.choice(np.arange(1, 9), size=n, p=[0.7, 0.08, 0.08, 0.04, 0.02, 0.05, 0.02, 0.01])
        occp = rng.integers(10, 9830, n).astype(float)
        pobp = np.where(rng.random(n) < 0.7, rng.integers(1, 57, n), rng.integers(100, 555, n))
        relp = rng.choice(np.arange(0, 18), size=n)
        log_inc = (9.0 + 0.12 * (schl - 16) + 0.02 * (wkhp - 40) + 0.015 * (age - 40) - 0.2 * (sex == 2)
                   + effect[code] + rng.normal(0, 0.6, n))
        frames.append(pd.DataFrame({
            "AGEP": age, "COW": cow, "SCHL": schl, "MAR": mar, "POBP": pobp, "RELP": relp, "OCCP": occp,
            "WKHP": wkhp, "SEX": sex, "RAC1P": code, "PINCP": np.exp(log_inc), "PWGTP": 1,
        }))
    return pd.concat(frames, ignore_index=True)


def load_acs_ca_extract_frame(path: Path | None = None) -> pd.DataFrame:
    """The preprocessed surrogate ``acs-ca-extract`` frame from the registered mirror file.

    Its PINCP column is the boolean PINCP > 50,000, so the "income" is that indicator (0/1); PINCP > 100
    cannot be applied and there is no PWGTP. Spec: seed-001 §6 "Data availability risk".
    """
    if path is None:
        from repro.datasets.store import fetch

        path = fetch(CA_EXTRACT_SOURCE)
    raw = pd.read_csv(path)
    raw["PINCP"] = raw["PINCP"].astype(str).str.lower().map({"true": 1.0, "false": 0.0, "1.0": 1.0,
                                                              "0.0": 0.0, "1": 1.0, "0": 0.0})
    return preprocess_acs_frame(raw, income_filter=False)


def default_acs_dir() -> Path:
    """Where the ACS PUMS files live: ``$REPRO_ACS_DIR``, else ``<data cache>/acs``."""
    env = os.environ.get("REPRO_ACS_DIR")
    if env:
        return Path(env).expanduser().absolute()
    from repro.datasets.store import data_dir

    return data_dir() / "acs"


def _state_files(root: Path, year: int, states: Sequence[str] | None) -> list[Path]:
    from folktables.load_acs import _STATE_CODES, state_list

    chosen = list(states) if states else list(state_list)
    return [root / str(year) / "1-Year" / f"psam_p{_STATE_CODES[s]}.csv" for s in chosen]


def acs_files_present(root: Path | None = None, *, years: Sequence[int] = (2017, 2018),
                      states: Sequence[str] | None = None) -> bool:
    """True if every ``<root>/<year>/1-Year/psam_p<FIPS>.csv`` the pipeline needs exists."""
    root = Path(root) if root is not None else default_acs_dir()
    return all(p.is_file() for y in years for p in _state_files(root, y, states))


def _folktables_year(root: Path, year: int, states: Sequence[str] | None, download: bool) -> pd.DataFrame:
    from folktables import ACSDataSource

    state = random.getstate()  # folktables seeds the global `random`; restore it afterwards
    try:
        source = ACSDataSource(survey_year=str(year), horizon="1-Year", survey="person", root_dir=str(root))
        return source.get_data(states=list(states) if states else None, density=1, download=download)
    except FileNotFoundError as exc:
        raise DataUnavailableError(
            f"ACS PUMS {year} person files not found under {root}/{year}/1-Year ({exc}). Put the "
            "psam_p<FIPS>.csv files there (folktables layout), set REPRO_ACS_DIR, or run with "
            "--set acs_download=true to download them (several GB) from census.gov.") from exc
    finally:
        random.setstate(state)


def load_acs_frames(root: Path | None = None, *, states: Sequence[str] | None = None, download: bool = False,
                    scaler_year: int = 2017, pool_year: int = 2018) -> tuple[pd.DataFrame, pd.DataFrame, Path]:
    """(scaler frame, pool frame, root): the preprocessed PUMS person files of two years via folktables.

    Spec: seed-001 §6 steps 1–4.
    """
    root = Path(root) if root is not None else default_acs_dir()
    scaler = preprocess_acs_frame(_folktables_year(root, scaler_year, states, download))
    pool = preprocess_acs_frame(_folktables_year(root, pool_year, states, download))
    return scaler, pool, root


DATASET = Dataset(
    name="acs-ca-extract", kind="frame", loader=load_acs_ca_extract_frame, sources=(CA_EXTRACT_SOURCE,),
    description="ACS PUMS California 2018 extract, income only as the >50K indicator (Private-Fair-Greedy's "
                "offline surrogate; the faithful PUMS files come through folktables, load_acs_frames)",
)
