"""The one split (issue 36): equal, draw for draw, to the three per-study policies it replaced."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pytest

from repro.datasets.authors_files import authors_split
from repro.datasets.entry import AuthorsFile, Dataset
from repro.datasets.split import Parts, split, split_sizes
from repro.datasets.tabular import TabularDataset, train_test_indices
from repro.errors import InvalidParameterError

FIXTURE = Path(__file__).parents[1] / "fixtures" / "datasets" / "split_digests.json"


def _authors() -> AuthorsFile:
    return AuthorsFile(filename="t.csv", git_blob="0" * 40, sources=(), label="y", sensitive="s", numeric=(),
                       group_names=("a", "b"), positive_group="b", n_rows=0, n_features=0, canonical=False,
                       recipe="", build=lambda: (None, ""))


TABULAR = Dataset(name="t", loader=lambda: None, authors=_authors())
IMAGES = Dataset(name="i", loader=lambda: None, kind="image", clean_split="shuffled")


# --- frozen copies of the policies this replaced (thesis Part I, DP-FERMI tabular, UTKFace) ----------------

def _old_thesis(n: int, data: str, sub: int, rng: np.random.Generator):
    """repro/studies/thesis/part1_tables.py prepare() before issue 36: (kept rows or None, train, test)."""
    keep = None
    if data == "authors":
        train, test = authors_split(n)
        if sub and sub < n:
            k = max(int(round(sub * train.size / n)), 2)
            train = rng.choice(train, size=k, replace=False)
            test = np.sort(rng.choice(test, size=max(sub - k, 2), replace=False))
    else:
        m = n
        if sub and sub < n:
            keep = np.sort(rng.choice(n, size=sub, replace=False))
            m = sub
        train, test = train_test_indices(m, 0.75, rng=rng)
    return keep, train, test


def _old_dpfermi(n: int, data: str, sub: int, fraction: float, rng: np.random.Generator):
    """repro/studies/dpfermi/_tabular.py split() before issue 36 (index part)."""
    if data == "authors":
        train, test = authors_split(n, fraction)
    else:
        train, test = train_test_indices(n, fraction, rng=rng)
    if 0 < sub < train.size:
        train = np.sort(rng.choice(train, size=sub, replace=False))
        test = np.sort(rng.choice(test, size=min(test.size, max(sub // 3, 200)), replace=False))
    return train, test


def _old_utkface(n: int, sub: int, fraction: float, rng: np.random.Generator):
    """repro/studies/dpfermi/utkface.py split_indices() before issue 36."""
    perm = rng.permutation(n)
    if sub:
        perm = perm[:sub]
    n_train = int(math.floor(fraction * perm.size))
    return perm[:n_train], perm[n_train:]


def _same(a: np.ndarray | None, b: np.ndarray | None) -> None:
    assert (a is None) == (b is None)
    if a is not None:
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("n", [7, 100, 1001, 5_875])
@pytest.mark.parametrize("sub", [0, 3, 50, 999, 5_875, 10_000])
@pytest.mark.parametrize("data", ["authors", "clean"])
def test_rows_rule_is_the_thesis_policy(n: int, sub: int, data: str) -> None:
    for seed in (0, 1):
        keep, train, test = _old_thesis(n, data, sub, np.random.default_rng(seed))
        rng = np.random.default_rng(seed)
        parts = split(TABULAR, data, n=n, rng=rng, subsample=sub, subsample_of="rows", train_fraction=0.75)
        _same(parts.rows, keep)
        _same(parts.train, train)
        _same(parts.test, test)
        # the generator is left in the same state: the study's next draw (2/3–1/3 split) is unchanged
        old = np.random.default_rng(seed)
        _old_thesis(n, data, sub, old)
        assert rng.integers(2**62) == old.integers(2**62)


@pytest.mark.parametrize("n", [100, 1001, 5_875])
@pytest.mark.parametrize("sub", [0, 10, 300, 2_000, 5_000])
@pytest.mark.parametrize("data", ["authors", "clean"])
@pytest.mark.parametrize("fraction", [0.75, 0.8])
def test_train_rule_is_the_dpfermi_policy(n: int, sub: int, data: str, fraction: float) -> None:
    train, test = _old_dpfermi(n, data, sub, fraction, np.random.default_rng(3))
    parts = split(TABULAR, data, n=n, rng=np.random.default_rng(3), subsample=sub, subsample_of="train",
                  train_fraction=fraction)
    assert parts.rows is None
    _same(parts.train, train)
    _same(parts.test, test)


@pytest.mark.parametrize("sub", [0, 1, 400, 23_705])
@pytest.mark.parametrize("fraction", [0.75, 0.5])
def test_shuffled_rule_is_the_utkface_policy(sub: int, fraction: float) -> None:
    train, test = _old_utkface(23_705, sub, fraction, np.random.default_rng(0))
    parts = split(IMAGES, "clean", n=23_705, rng=np.random.default_rng(0), subsample=sub, train_fraction=fraction)
    _same(parts.train, train)
    _same(parts.test, test)
    with pytest.raises(InvalidParameterError, match=r"subsample must be 0 \(all\) or in \[1, 10\]"):
        split(IMAGES, "clean", n=10, rng=np.random.default_rng(0), subsample=11)


def test_authors_split_needs_no_generator_a_random_split_does() -> None:
    parts = split(TABULAR, "authors", n=1001)
    for got, want in zip((parts.train, parts.test), authors_split(1001), strict=True):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(InvalidParameterError, match="rng="):
        split(TABULAR, "clean", n=1001)
    with pytest.raises(InvalidParameterError, match="rng="):
        split(TABULAR, "authors", n=1001, subsample=10)


def test_policy_errors_are_one_line() -> None:
    clean_only = Dataset(name="c", loader=lambda: None)
    with pytest.raises(InvalidParameterError, match="data must be one of clean for dataset 'c'"):
        split(clean_only, "authors", n=10)
    with pytest.raises(InvalidParameterError, match="subsample_of"):
        split(TABULAR, "clean", n=10, rng=np.random.default_rng(0), subsample_of="test")
    with pytest.raises(InvalidParameterError, match="train_fraction"):
        split(TABULAR, "clean", n=10, rng=np.random.default_rng(0), train_fraction=1.0)
    with pytest.raises(InvalidParameterError, match="clean_split"):
        Dataset(name="x", loader=lambda: None, clean_split="stratified")


def test_the_entry_declares_the_training_fraction() -> None:
    entry = Dataset(name="f", loader=lambda: None, train_fraction=0.5)
    parts = split(entry, "clean", n=100, rng=np.random.default_rng(0))
    assert parts.train.size == 50


@pytest.mark.parametrize("entry,data", [(TABULAR, "clean"), (TABULAR, "authors"), (IMAGES, "clean")])
@pytest.mark.parametrize("n,sub", [(7, 0), (1000, 0), (1001, 0), (45_222, 0), (60_324, 0), (1001, 500), (800, 2000)])
@pytest.mark.parametrize("fraction", [None, 0.8, 2 / 3])
def test_split_sizes_are_those_split_draws(entry: Dataset, data: str, n: int, sub: int, fraction) -> None:
    """The notes' derived row counts (no draw) equal the sizes of the split itself, for every rule."""
    if entry is IMAGES and sub > n:
        sub = 0   # the shuffled rule refuses a subsample larger than the data
    parts = split(entry, data, n=n, rng=np.random.default_rng(3), subsample=sub, train_fraction=fraction)
    assert split_sizes(entry, data, n=n, subsample=sub, train_fraction=fraction) == (parts.train.size,
                                                                                     parts.test.size)


def test_registered_row_counts_are_the_loaders() -> None:
    """The row counts the entries declare (used without loading) are the ones their loaders check."""
    from repro.datasets import adult, credit_card, parkinsons, registry, retired_adult

    for module in (adult, credit_card, parkinsons, retired_adult):
        entry = registry.get_dataset(module.DATASET.name)
        assert entry.rows("clean") == module.N_ROWS
    assert registry.get_dataset("adult").rows("authors") == 60_324 == 2 * 30_162
    assert Dataset(name="x", loader=lambda: None).rows() is None


@pytest.mark.data
def test_registered_row_counts_match_the_loaded_data(data_mirror, monkeypatch) -> None:
    monkeypatch.setenv("REPRO_DATA_MIRROR", str(data_mirror))
    from repro.datasets import registry

    for name in ("adult", "credit-card"):
        entry = registry.get_dataset(name)
        for data in entry.data_modes:
            assert entry.load(data).n == entry.rows(data), (name, data)


def test_take_cuts_a_dataset_to_the_kept_rows() -> None:
    ds = TabularDataset(name="t", X=np.arange(10.0)[:, None], y=np.arange(10), s=np.arange(10) % 2,
                        feature_names=("x",), numeric_columns=(0,), group_names=("a", "b"), description="",
                        source="")
    assert Parts(np.arange(2), np.arange(2, 3)).take(ds) is ds
    cut = Parts(np.arange(2), np.arange(2, 3), rows=np.array([1, 4, 7])).take(ds)
    assert cut.y.tolist() == [1, 4, 7] and cut.X[:, 0].tolist() == [1.0, 4.0, 7.0]


# --- on the real data: the studies' splits equal the old code's, dataset x mode --------------------------

def _digest(*arrays: np.ndarray) -> str:
    d = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        d.update(str(a.dtype).encode() + str(a.shape).encode() + a.tobytes())
    return d.hexdigest()[:16]


class _Ctx:
    def __init__(self, seed: int) -> None:
        self.seed = seed

    def rng(self, *labels, scope=None) -> np.random.Generator:
        return np.random.default_rng(self.seed)


@pytest.mark.data
@pytest.mark.slow
def test_study_splits_equal_the_old_policies_on_every_dataset_and_mode(data_mirror, monkeypatch) -> None:
    """Digests of (indices, standardized X, y, s) written by the code before issue 36 (thesis ``prepare`` at
    subsample 0 and 1000, fixed and per-repetition; DP-FERMI ``split`` at subsample 0 and 1000, fractions 0.75
    and 0.8) for adult, credit-card, retired-adult and parkinsons in both data modes."""
    monkeypatch.setenv("REPRO_DATA_MIRROR", str(data_mirror))
    from repro.engine.identity import stable_words
    from repro.engine.trial import StreamSeed
    from repro.studies.dpfermi._tabular import load_dataset
    from repro.studies.dpfermi._tabular import split as dpfermi_split
    from repro.studies.thesis.part1_tables import prepare

    want = json.loads(FIXTURE.read_text(encoding="utf-8"))
    got = {}
    for name in ("adult", "credit-card", "retired-adult", "parkinsons"):
        for data in ("authors", "clean"):
            for sub in (0, 1000):
                for mode, rep in (("fixed", 0), ("per-repetition", 1)):
                    # the stream the old code drew: global_rng(0, "thesis-part1", "split", name, sub, rep'),
                    # now the declared scope `split` of family thesis-part1 (tests/core/test_scopes.py)
                    stream = StreamSeed((0, *stable_words("global", "thesis-part1", "split", name, sub,
                                                          0 if mode == "fixed" else rep)))
                    ds, sp, X = prepare(name, stream, sub, data)
                    got[f"thesis/{name}/{data}/{sub}/{mode}"] = _digest(sp.full_train, sp.train, sp.post, sp.test,
                                                                        X, ds.y, ds.s)
            ds = load_dataset(name, data)
            for sub in (0, 1000):
                for fraction in (0.75, 0.8):
                    parts = dpfermi_split(ds, {"dataset": name, "subsample": sub, "train_fraction": fraction},
                                          _Ctx(5), data)
                    got[f"dpfermi/{name}/{data}/{sub}/{fraction}"] = _digest(*parts)
    assert got == want
