"""The authors' processed files and split (issue 13, facts 1–4)."""

from __future__ import annotations

import dataclasses
import io

import numpy as np
import pandas as pd
import pytest

from repro.datasets import authors_files, registry
from repro.datasets.authors_files import authors_split, git_blob_id
from repro.datasets.store import fetch
from repro.errors import DataUnavailableError, InvalidParameterError, UnknownNameError
from repro.privacy.group import ONE_ROW_PER_PERSON, privacy_unit


def authors_file(name: str):
    return registry.get_dataset(name).authors


def load_authors_dataset(name: str):
    return registry.load(name, "authors")


load_authors_dataset.cache_clear = authors_files.load_authors_dataset.cache_clear


def authors_csv_bytes(name: str) -> bytes:
    return authors_files.authors_csv_bytes(registry.get_dataset(name))


def write_authors_csv(name: str, path) -> None:
    authors_files.write_authors_csv(registry.get_dataset(name), path)


def _replace_authors(monkeypatch: pytest.MonkeyPatch, name: str, **changes) -> None:
    """Replace fields of ``name``'s declared authors' file for one test (the registry entry is swapped)."""
    entry = registry.get_dataset(name)
    monkeypatch.setitem(registry._REGISTRY, name,
                        dataclasses.replace(entry, authors=dataclasses.replace(entry.authors, **changes)))


@pytest.fixture
def mirror(data_mirror, isolated_data_env, monkeypatch):
    monkeypatch.setenv("REPRO_DATA_MIRROR", str(data_mirror))
    load_authors_dataset.cache_clear()
    authors_files._csv.cache_clear()
    yield data_mirror
    load_authors_dataset.cache_clear()
    authors_files._csv.cache_clear()


# --- the split rule (no data needed) ---------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 2, 6, 10, 11, 101, 5_875, 60_324])
def test_split_is_pandas_sample(n: int) -> None:
    """Training rows = df.sample(frac=0.75, random_state=100) in sample order; test = the rest."""
    df = pd.DataFrame({"i": np.arange(n)})
    part = df.sample(frac=0.75, random_state=100)
    train, test = authors_split(n)
    np.testing.assert_array_equal(train, part.index.to_numpy())
    np.testing.assert_array_equal(test, df.drop(part.index).index.to_numpy())


def test_split_sizes_rounding_and_determinism() -> None:
    # pandas takes round(frac·n) (half to even): 1.5 → 2 and 4.5 → 4.
    assert [authors_split(n)[0].size for n in (2, 6)] == [2, 4]
    for n, sizes in {60_324: (45_243, 15_081), 45_849: (34_387, 11_462), 5_875: (4_406, 1_469),
                     30_000: (22_500, 7_500)}.items():
        train, test = authors_split(n)
        assert (train.size, test.size) == sizes
        assert np.all(np.diff(test) > 0) and not np.all(np.diff(train) > 0)   # file vs sample order
        np.testing.assert_array_equal(np.sort(np.concatenate([train, test])), np.arange(n))
    np.testing.assert_array_equal(authors_split(1000)[0], authors_split(1000)[0])
    assert not np.array_equal(authors_split(1000)[0], authors_split(1000, random_state=1)[0])
    with pytest.raises(InvalidParameterError):
        authors_split(10, train_fraction=1.0)


def test_git_blob_id_and_unknown_name() -> None:
    assert git_blob_id(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"   # git's empty blob
    assert git_blob_id(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"
    with pytest.raises(UnknownNameError, match="'adul'"):
        load_authors_dataset("adul")
    with pytest.raises(InvalidParameterError, match="declares no authors' file"):
        authors_files.load_authors_dataset(registry.get_dataset("compas"))


# --- the rebuilt files (mirror needed) -------------------------------------------------------------

@pytest.mark.data
@pytest.mark.parametrize("name", ["adult", "retired-adult", "parkinsons"])
def test_rebuilt_file_is_the_authors_blob(mirror, name: str, tmp_path) -> None:
    """The strongest check: our CSV bytes hash to the authors' git blob id."""
    path = tmp_path / authors_file(name).filename
    write_authors_csv(name, path)
    assert git_blob_id(path.read_bytes()) == authors_file(name).git_blob
    ds = load_authors_dataset(name)
    assert ds.extra["verified"] is True and ds.canonical is True
    assert ds.name == f"{name}-authors"


@pytest.mark.data
def test_adult_authors(mirror) -> None:
    ds = load_authors_dataset("adult")
    e = ds.extra
    assert (ds.n, ds.d, len(ds.numeric_columns)) == (60_324, 102, 6)
    assert (e["distinct_rows"], e["duplicated_rows"]) == (30_139, 30_185)
    np.testing.assert_array_equal(ds.X[:30_162], ds.X[30_162:])             # written twice
    assert e["split"] == {"train": 45_243, "test": 15_081}
    assert (e["test_rows_with_own_copy_in_train"], e["test_only_records"]) == (11_287, 1_897)
    assert e["authors_group_code"] == {"train": {"Male": 0, "Female": 1}, "test": {"Male": 0, "Female": 1}}
    assert set(np.unique(ds.X[:, 6:])) == {0.0, 1.0} and np.all(ds.X[:, 6:].sum(axis=1) == 7)
    assert not any(f.startswith(("sex", ">50K")) for f in ds.feature_names)
    train, _ = authors_split(ds.n)
    first = train[0]
    assert first == 16_056 and ds.s[first] == 1 and ds.y[first] == 0              # a man, <=50K
    np.testing.assert_array_equal(ds.X[first, :6], [37, 176_014, 9, 0, 0, 50])
    assert "adult.test" not in ds.source and int(ds.y.sum()) == 2 * 7_508
    # privacy unit: each person's row is written twice, so a per-row ε is per person a group of 2
    assert privacy_unit(ds)[0] == 2 and "2 rows per person" in privacy_unit(ds)[1]


@pytest.mark.data
def test_adult_one_hot_is_get_dummies(mirror) -> None:
    """Our one-hot block equals pandas get_dummies on the authors' frame (sorted levels)."""
    ds = load_authors_dataset("adult")
    df = pd.read_csv(io.BytesIO(authors_csv_bytes("adult")))
    cats = ["workclass", "education", "marital-status", "occupation", "relationship", "race",
            "native-country"]
    dummies = pd.get_dummies(df, columns=cats)
    names = [c for c in dummies.columns if c.split("_", 1)[0] in cats]
    assert [n.replace("_", "=", 1) for n in names] == list(ds.feature_names[6:])
    np.testing.assert_array_equal(dummies[names].to_numpy(dtype=np.float64), ds.X[:, 6:])


@pytest.mark.data
def test_retired_adult_authors(mirror) -> None:
    ds = load_authors_dataset("retired-adult")
    assert (ds.n, ds.d, len(ds.numeric_columns)) == (45_849, 101, 5)
    assert privacy_unit(ds) == ONE_ROW_PER_PERSON                               # a row is a person
    assert ds.extra["split"] == {"train": 34_387, "test": 11_462}
    code = ds.extra["authors_group_code"]
    assert code["train"]["Male"] != code["test"]["Male"]                     # the code flips
    raw = pd.read_csv(fetch("adult-reconstruction"), dtype=str, na_filter=False)
    assert int(raw["income"].astype(float).eq(50_000).sum()) == 48              # 47 of them kept
    raw = raw[~raw.eq("?").any(axis=1)].reset_index(drop=True)
    income = raw["income"].astype(float).to_numpy()
    assert int((income == 50_000).sum()) == 47 and not ds.y[income == 50_000].any()
    np.testing.assert_array_equal(ds.y, (income > 50_000).astype(np.int8))
    np.testing.assert_array_equal(ds.s, raw["gender"].eq("Male").to_numpy(dtype=np.int8))


@pytest.mark.data
def test_parkinsons_authors(mirror) -> None:
    ds = load_authors_dataset("parkinsons")
    assert (ds.n, ds.d, ds.numeric_columns) == (5_875, 19, tuple(range(19)))
    assert (int(ds.y.sum()), int((ds.y == 0).sum())) == (2_934, 2_941)
    assert "motor_UPDRS" in ds.feature_names and "total_UPDRS" not in ds.feature_names
    assert "subject#" not in ds.feature_names and int(ds.s.sum()) == 1_867       # female = 1
    assert ds.extra["split"] == {"train": 4_406, "test": 1_469}
    raw = pd.read_csv(fetch("parkinsons-updrs"))
    np.testing.assert_array_equal(ds.s, raw["sex"].to_numpy())
    # privacy unit: a row is a recording; a subject has up to this many (sex is per subject)
    assert privacy_unit(ds)[0] == int(raw["subject#"].value_counts().max()) == 168
    assert int(raw.groupby("subject#")["sex"].nunique().max()) == 1


@pytest.mark.data
def test_credit_card_authors_is_inferred(mirror) -> None:
    ds = load_authors_dataset("credit-card")
    assert (ds.n, ds.d, len(ds.numeric_columns)) == (30_000, 85, 14)
    assert privacy_unit(ds) == ONE_ROW_PER_PERSON
    assert ds.extra["split"] == {"train": 22_500, "test": 7_500}
    assert ds.canonical is False and ds.extra["verified"] is False and "inferred" in ds.description.lower()
    assert int(ds.s.sum()) == 11_888 and int(ds.y.sum()) == 6_636                 # male = 1
    assert not any(f.startswith(("EDUCATION=0", "EDUCATION=5", "EDUCATION=6", "MARRIAGE=0"))
                   for f in ds.feature_names)


def test_shape_mismatch_raises_with_a_hint(monkeypatch) -> None:
    cols = {c: [1.0, 2.0] for c in authors_file("parkinsons").numeric}
    tiny = pd.DataFrame({**cols, "sex": ["Female", "Male"], "total_UPDRS": ["Yes", "No"]})
    _replace_authors(monkeypatch, "parkinsons", build=lambda: (tiny, "tiny"))
    authors_files._csv.cache_clear()
    load_authors_dataset.cache_clear()
    try:
        with pytest.raises(DataUnavailableError, match="5875 rows × 19 features, got 2 × 19"):
            load_authors_dataset("parkinsons")
    finally:
        authors_files._csv.cache_clear()
        load_authors_dataset.cache_clear()


def test_every_dataset_is_registered() -> None:
    files = registry.authors_files()
    assert sorted(files) == ["adult", "credit-card", "parkinsons", "retired-adult"]
    assert all(len(f.git_blob) == 40 for f in files.values())
    assert all(registry.get_dataset(name).authors is f for name, f in files.items())   # read from the entry
    assert registry.get_dataset("compas").authors is None


def test_missing_columns_raise_with_a_hint(monkeypatch) -> None:
    tiny = pd.DataFrame({"age": [1, 2], "sex": ["F", "M"], "total_UPDRS": ["Yes", "No"]})
    _replace_authors(monkeypatch, "parkinsons", build=lambda: (tiny, "tiny"))
    authors_files._csv.cache_clear()
    load_authors_dataset.cache_clear()
    try:
        with pytest.raises(DataUnavailableError, match="lacks columns"):
            load_authors_dataset("parkinsons")
    finally:
        authors_files._csv.cache_clear()
        load_authors_dataset.cache_clear()
