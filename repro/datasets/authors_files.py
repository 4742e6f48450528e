"""The DP-FERMI / thesis authors' processed CSV files and their train/test split, rebuilt as data.

Spec: issue 13, "Facts" 1–4 and "What to build" item 1. The authors' repositories
(``devanshgupta160/Stochastic-Differentially-Private-and-Fair-Learning`` at ``5360438`` and
``hradghoukasian/dp_fair_binary``, same ``dataloader.py`` and data blobs) read one processed CSV per
dataset. Each file is declared on its dataset's entry (``DATASET.authors``, a
:class:`repro.datasets.entry.AuthorsFile` whose ``build`` makes the frame, in the dataset's module); this
module rebuilds the file deterministically from the registered raw file(s) and loads it the way their
loader does.

Rebuilding the files (the CSV text is pandas ``to_csv(index=False)`` of the frame ``build`` returns):

* ``adult`` → ``adult_original_purified.csv``: ``adult.data`` only (``adult.test`` unused), values
  stripped, rows with a ``?`` dropped (30,162), label column ``>50K`` as ``Yes``/``No``, and the
  whole table **written twice** (60,324 rows, 30,139 distinct). Fact 1.
* ``retired-adult`` → ``adult_reconstruction_processed.csv``: canonical ``adult_reconstruction.csv``
  minus its 3,682 rows with a ``?`` (45,849), ``income`` → ``Yes`` iff > 50,000 (the 48 rows at
  exactly 50,000 are ``No``: 48 in the raw file, 47 of them kept), canonical column order.
  Fact 2.
* ``parkinsons`` → ``parkinsons_updrs_processed.csv``: the 5,875 canonical rows, ``subject#``
  dropped, ``sex`` 0/1 → ``Male``/``Female``, ``total_UPDRS`` → ``Yes`` iff > its median over all
  rows (27.576). ``total_UPDRS`` is the label column, so it is not a feature; ``motor_UPDRS`` is.
  Fact 3.
* ``credit-card`` → ``credit-card-defaulters_processed.csv``: **inferred** (fact 4; the authors'
  bytes are not public). Built from the credit-card loader's source (the derived TSV in the
  mirror): ``ID`` dropped, EDUCATION {0, 5, 6} → 4, MARRIAGE 0 → 3, label ``Yes`` iff default.

Verification: the git blob id (sha1 of ``b"blob <size>\\0" + bytes``) of the rebuilt Adult,
Retired Adult and Parkinsons files equals the authors' blob, so those three files are byte-identical
to theirs (``extra["verified"]`` is computed on every load, and a test pins it). Credit Card cannot
be checked: ``verified`` is False and the dataset is non-canonical.

Loading (as ``dataloader.GeneralData`` does): ``read_csv`` of those bytes; every non-sensitive,
non-label column that the authors do not z-score is one-hot encoded on the full frame before the
split (categories sorted, as ``get_dummies``); the z-scored columns are ``numeric_columns`` (left raw
here: standardize after the split with :func:`repro.datasets.tabular.standardize`, training mean
and ddof = 1 std, as they do); Y = 1 iff the label is ``Yes``. Feature order: the z-scored columns in
file order, then the one-hot blocks in file column order. (The authors' own order comes from Python
``set`` iteration and changes with ``PYTHONHASHSEED``, so it is not reproducible; a permutation of
features does not change their linear model.)

Sensitive attribute: A uses the same fixed mapping as the project's clean loader of each dataset
(Adult / Retired Adult: Male = 1; Parkinsons: female = 1; Credit Card: SEX = 1 (male) = 1). The
authors instead code groups by first appearance, separately in each split part;
``extra["authors_group_code"]`` gives that coding ({"train": {group: code}, "test": {...}}) for
:func:`authors_split` (on Adult male is 0 in both parts; on Retired Adult the code flips).

Split (:func:`authors_split`): ``df.sample(frac=0.75, random_state=100)`` is the training part (in
sample order), the remaining rows in file order are the test part; the same split for every seed.
"""

from __future__ import annotations

import functools
import hashlib
import io
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from repro.datasets.adult_raw import one_hot_sorted
from repro.datasets.tabular import TabularDataset
from repro.errors import DataUnavailableError, InvalidParameterError

if TYPE_CHECKING:
    from repro.datasets.entry import AuthorsFile, Dataset

__all__ = ["load_authors_dataset", "authors_split", "authors_csv_bytes", "write_authors_csv", "git_blob_id",
           "yes_no"]

_YES, _NO = "Yes", "No"


def yes_no(mask: pd.Series | np.ndarray) -> np.ndarray:
    """``Yes`` where ``mask`` holds, else ``No`` (the authors' label values)."""
    return np.where(np.asarray(mask), _YES, _NO)


def _declared(dataset: Dataset) -> AuthorsFile:
    """The authors' file ``dataset`` declares; a one-line error if it declares none."""
    if dataset.authors is None:
        raise InvalidParameterError(f"dataset {dataset.name!r} declares no authors' file (data mode 'authors').")
    return dataset.authors


def git_blob_id(data: bytes) -> str:
    """Git's blob id of ``data``: sha1 of ``b"blob <size>\\0" + data`` (as ``git hash-object``)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@functools.lru_cache(maxsize=4)
def _csv(spec: AuthorsFile) -> tuple[bytes, str]:
    frame, source = spec.build()
    return frame.to_csv(index=False).encode(), source


def authors_csv_bytes(dataset: Dataset) -> bytes:
    """The rebuilt text of the authors' processed CSV of ``dataset`` (an entry; see the module docstring)."""
    return _csv(_declared(dataset))[0]


def write_authors_csv(dataset: Dataset, path: str | Path) -> None:
    """Write the rebuilt authors' CSV of ``dataset`` to ``path`` (byte-identical for all but credit-card)."""
    Path(path).write_bytes(authors_csv_bytes(dataset))


def authors_split(n: int, train_fraction: float = 0.75, random_state: int = 100
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(training rows in sample order, test rows in file order) of ``df.sample(frac, random_state)``.

    pandas draws ``round(train_fraction·n)`` rows (Python rounding, half to even) with
    ``RandomState(random_state).choice(n, size, replace=False)``; the test part is
    ``df.drop(train.index)``. The authors use one split for every seed (issue 13, Loader).
    """
    if n < 1:
        raise InvalidParameterError(f"n must be >= 1; got {n}.")
    if not 0 < train_fraction < 1:
        raise InvalidParameterError(f"train_fraction must lie in (0, 1); got {train_fraction}.")
    size = round(train_fraction * n)
    train = np.random.RandomState(random_state).choice(n, size=size, replace=False).astype(np.int64)
    in_train = np.zeros(n, dtype=bool)
    in_train[train] = True
    return train, np.flatnonzero(~in_train).astype(np.int64)


def _first_appearance(values: pd.Series) -> dict[str, int]:
    return {str(v): i for i, v in enumerate(values.unique())}


def _leakage(df: pd.DataFrame, copies: int, train: np.ndarray, test: np.ndarray) -> dict[str, int]:
    """How much of the test part is also in the training part (issue 13 fact 1).

    By origin: row ``i`` is a copy of source record ``i mod (n / copies)``; counts the test rows
    whose source record also has a row in training, and the source records all of whose rows are in
    the test part. By value: test rows equal (every column) to some training row, and the distinct
    test rows equal to none.
    """
    record = np.arange(len(df)) % (len(df) // copies)
    in_train = np.zeros(len(df) // copies, dtype=bool)
    in_train[record[train]] = True
    key = pd.util.hash_pandas_object(df, index=False).to_numpy()
    train_keys = np.unique(key[train])
    test_keys = key[test]
    return {
        "test_rows_with_own_copy_in_train": int(in_train[record[test]].sum()),
        "test_only_records": int(np.unique(record[test][~in_train[record[test]]]).size),
        "test_rows_identical_to_a_train_row": int(np.isin(test_keys, train_keys).sum()),
        "test_only_distinct_rows": int(np.setdiff1d(test_keys, train_keys).size),
    }


@functools.lru_cache(maxsize=4)
def load_authors_dataset(dataset: Dataset) -> TabularDataset:
    """The authors' processed file of ``dataset`` (an entry) as a :class:`TabularDataset` named ``<name>-authors``.

    X is unstandardized (raw numeric values, one-hot 0/1); ``numeric_columns`` are the columns the
    authors z-score; Y = 1 iff the label is ``Yes``; A as in the project's clean loader. Cached
    in-process (do not mutate the arrays). Spec: issue 13 facts 1–4.

    Raises
    ------
    DataUnavailableError
        If a raw file is missing, or the rebuilt file does not have the expected shape.
    """
    spec = _declared(dataset)
    name = dataset.name
    data, source = _csv(spec)
    df = pd.read_csv(io.BytesIO(data))
    blob = git_blob_id(data)
    numeric = list(spec.numeric)
    missing = [c for c in (*numeric, spec.sensitive, spec.label) if c not in df.columns]
    if missing:
        raise DataUnavailableError(f"{name}-authors: the rebuilt {spec.filename} lacks columns {missing}; "
                                   "check the raw files with `repro data verify`.")
    onehot_cols = [c for c in df.columns if c not in (*numeric, spec.sensitive, spec.label)]
    onehot, onehot_names = one_hot_sorted(df, onehot_cols)
    X = np.hstack([df[numeric].astype(np.float64).to_numpy(), onehot])
    if X.shape != (spec.n_rows, spec.n_features):
        raise DataUnavailableError(
            f"{name}-authors: expected {spec.n_rows} rows × {spec.n_features} features, got "
            f"{X.shape[0]} × {X.shape[1]}; check the raw files with `repro data verify`.")
    y = df[spec.label].eq(_YES).to_numpy(dtype=np.int8)
    s = df[spec.sensitive].astype(str).eq(spec.positive_group).to_numpy(dtype=np.int8)
    train, test = authors_split(len(df))
    sens = df[spec.sensitive]
    rows_per_person, unit = spec.privacy_unit()   # the privacy unit (repro.privacy.group.privacy_unit)
    extra = {
        "authors_file": spec.filename,
        "git_blob": spec.git_blob,
        "rebuilt_git_blob": blob,
        "verified": blob == spec.git_blob,
        "duplicated_rows": int(df.duplicated().sum()),
        "distinct_rows": int(len(df) - df.duplicated().sum()),
        "split": {"train": int(train.size), "test": int(test.size)},
        "authors_group_code": {"train": _first_appearance(sens.iloc[train]),
                               "test": _first_appearance(sens.iloc[test])},
        **_leakage(df, spec.copies, train, test),
        "rows_per_person": rows_per_person,
        "privacy_unit": unit,
    }
    inferred = "" if spec.canonical else (
        "INFERRED reconstruction (issue 13 fact 4): the authors' bytes are not public and the "
        f"source ({source}) is a derived file; not verified. ")
    description = (f"{inferred}Authors' file {spec.filename} rebuilt from {source} "
                   f"({'byte-identical: git blob ' + blob if extra['verified'] else 'not byte-verified'}). "
                   + spec.recipe + " Split: authors_split (df.sample(frac=0.75, random_state=100), fixed "
                   "across seeds); standardize numeric_columns with training statistics after it.")
    return TabularDataset(
        name=f"{name}-authors", X=X, y=y, s=s, feature_names=(*numeric, *onehot_names),
        numeric_columns=tuple(range(len(numeric))), group_names=spec.group_names,
        description=description, source=source, canonical=spec.canonical and extra["verified"],
        extra=extra,
    )
