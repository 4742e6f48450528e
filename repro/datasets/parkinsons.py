"""UCI Parkinsons Telemonitoring as in DP-FERMI's tabular experiments.

Spec: seed-004-dpfermi.md §7.1 (Parkinsons row).

Source: the registered raw file ``parkinsons-updrs`` (``parkinsons_updrs.data``, 5,875 recordings
of 42 subjects).

Preprocessing (every choice):

1. Keep all **5,875 rows**; drop ``subject#`` (so recordings of one subject can land on both
   sides of the split, as in the authors' code).
2. Label Y = 1 iff ``total_UPDRS`` > its median over all rows (27.576; 2,934 positives). The
   median is taken over the whole file, as the authors' processed CSV does.
3. Sensitive attribute A = ``sex`` as coded in the file: **A = 0 for male, A = 1 for female**
   (female 1,867 = 31.8 %). ``sex`` is not a feature; ``total_UPDRS`` is the label source and is
   dropped.
4. Features (d = **19**, all numeric; standardize after the split with training statistics):
   age, test_time, motor_UPDRS, Jitter(%), Jitter(Abs), Jitter:RAP, Jitter:PPQ5, Jitter:DDP,
   Shimmer, Shimmer(dB), Shimmer:APQ3, Shimmer:APQ5, Shimmer:APQ11, Shimmer:DDA, NHR, HNR, RPDE,
   DFA, PPE. ``motor_UPDRS`` nearly leaks the label, which is why errors are ≈ 4–5 % (spec §7.1).
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from repro.datasets.authors_files import yes_no
from repro.datasets.entry import AuthorsFile, Dataset
from repro.datasets.store import fetch
from repro.datasets.tabular import TabularDataset
from repro.errors import DataUnavailableError

__all__ = ["DATASET", "load_parkinsons", "FEATURES", "N_ROWS", "N_FEATURES", "SOURCE", "RECORDINGS_PER_SUBJECT",
           "PRIVACY_UNIT"]

SOURCE = "parkinsons-updrs"
FEATURES = ("age", "test_time", "motor_UPDRS", "Jitter(%)", "Jitter(Abs)", "Jitter:RAP", "Jitter:PPQ5",
            "Jitter:DDP", "Shimmer", "Shimmer(dB)", "Shimmer:APQ3", "Shimmer:APQ5", "Shimmer:APQ11",
            "Shimmer:DDA", "NHR", "HNR", "RPDE", "DFA", "PPE")
N_ROWS = 5_875
N_FEATURES = 19
#: the most recordings of one subject in the raw file (42 subjects, 101–168 each; tested against the file)
RECORDINGS_PER_SUBJECT = 168
PRIVACY_UNIT = ("one row per voice recording: 42 subjects with 101–168 recordings each, sex a per-subject "
                "attribute (per subject, group privacy over all of its recordings)")


def build_parkinsons(raw: pd.DataFrame) -> TabularDataset:
    """Apply the module's preprocessing to the raw table (pure function).

    Raises
    ------
    DataUnavailableError
        If columns are missing, ``sex`` is not 0/1, or the shape is not 5,875 × 19.

    Spec: seed-004 §7.1 (Parkinsons row).
    """
    missing = [c for c in (*FEATURES, "sex", "total_UPDRS") if c not in raw.columns]
    if missing:
        raise DataUnavailableError(f"parkinsons: parkinsons_updrs.data lacks columns {missing}; "
                                   "check the file with `repro data verify`.")
    sex = raw["sex"].astype(int)
    if set(sex.unique()) != {0, 1}:
        raise DataUnavailableError(f"parkinsons: sex must be coded 0/1; got {sorted(sex.unique())}.")
    total = raw["total_UPDRS"].astype(np.float64).to_numpy()
    y = (total > np.median(total)).astype(np.int8)
    X = raw[list(FEATURES)].astype(np.float64).to_numpy()
    if X.shape != (N_ROWS, N_FEATURES):
        raise DataUnavailableError(
            f"parkinsons: expected {N_ROWS} rows × {N_FEATURES} features, got {X.shape[0]} × "
            f"{X.shape[1]}; check the raw file with `repro data verify`.")
    return TabularDataset(
        name="parkinsons", X=X, y=y, s=sex.to_numpy(dtype=np.int8), feature_names=FEATURES,
        numeric_columns=tuple(range(N_FEATURES)), group_names=("male (sex=0)", "female (sex=1)"),
        description=__doc__.split("Preprocessing (every choice):", 1)[1].strip(),
        source=SOURCE, canonical=True, extra={"median_total_UPDRS": float(np.median(total)),
                                               "rows_per_person": RECORDINGS_PER_SUBJECT, "privacy_unit": PRIVACY_UNIT},
    )


@functools.lru_cache(maxsize=1)
def load_parkinsons() -> TabularDataset:
    """Parkinsons Telemonitoring: 5,875 × 19, Y = total_UPDRS > median, A = sex (female = 1).

    Deterministic; cached in-process (do not mutate the arrays).

    Spec: seed-004 §7.1 (Parkinsons row).
    """
    return build_parkinsons(pd.read_csv(fetch(SOURCE)))


def _authors_frame() -> tuple[pd.DataFrame, str]:
    """Issue 13 fact 3: subject# dropped, sex as Male/Female, total_UPDRS → Yes iff > the median."""
    df = pd.read_csv(fetch(SOURCE)).drop(columns=["subject#"])
    df["sex"] = np.where(df["sex"].astype(int) == 1, "Female", "Male")
    df["total_UPDRS"] = yes_no(df["total_UPDRS"] > df["total_UPDRS"].median())
    return df, SOURCE


DATASET = Dataset(
    name="parkinsons", loader=load_parkinsons, n_rows=N_ROWS, sources=(SOURCE,),
    description="UCI Parkinsons Telemonitoring: 5,875 recordings x 19, Y = total_UPDRS > median, A = sex (DP-FERMI)",
    authors=AuthorsFile(
        filename="parkinsons_updrs_processed.csv", git_blob="97e79a9ea470688bb00065164670fabd3b810851",
        sources=(SOURCE,), label="total_UPDRS", sensitive="sex", numeric=FEATURES,
        group_names=("male (sex=0)", "female (sex=1)"), positive_group="Female", n_rows=5_875,
        n_features=19, canonical=True, unit=(RECORDINGS_PER_SUBJECT, PRIVACY_UNIT), build=_authors_frame,
        recipe=(
            "parkinsons_updrs.data, subject# dropped, label total_UPDRS > median (27.576) and not a "
            "feature; sex not a feature; all 19 features z-scored, motor_UPDRS among them; A = 1 for "
            "female.")),
)
