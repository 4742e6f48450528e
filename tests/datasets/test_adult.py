"""UCI Adult "purified" loader (spec seed-003 §3.1, P5, P9). Needs the data mirror."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from repro.datasets.adult import load_adult
from repro.datasets.tabular import split_indices, standardize

pytestmark = pytest.mark.data


@pytest.fixture
def adult(data_mirror: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("REPRO_DATA_MIRROR", str(data_mirror))
    monkeypatch.setenv("REPRO_DATA_DIR", str(tmp_path / "cache"))
    load_adult.cache_clear()
    yield load_adult()
    load_adult.cache_clear()


def test_shape_counts_and_mapping(adult) -> None:
    assert adult.X.shape == (45_222, 102)
    assert len(adult.feature_names) == 102
    # known marginals of the 45,222-row purified Adult: 11,208 incomes > 50K, 30,527 men
    assert int(adult.y.sum()) == 11_208
    assert int(adult.s.sum()) == 30_527
    assert adult.group_names == ("Female", "Male")
    assert "sex" not in " ".join(adult.feature_names)
    assert sum(n.startswith("race=") for n in adult.feature_names) == 5
    assert sum(n.startswith("native-country=") for n in adult.feature_names) == 41
    onehot = adult.X[:, 6:]
    assert set(np.unique(onehot)) == {0.0, 1.0}
    assert np.all(onehot.sum(axis=1) == 7)   # exactly one level of each of the 7 categoricals


def test_loader_is_deterministic(adult) -> None:
    load_adult.cache_clear()
    again = load_adult()
    np.testing.assert_array_equal(again.X, adult.X)
    np.testing.assert_array_equal(again.y, adult.y)


def test_standardize_uses_training_rows_only(adult) -> None:
    sp = split_indices(adult.n, rng=np.random.default_rng(0))
    X = standardize(adult.X, sp.full_train, adult.numeric_columns)
    tr = X[sp.full_train][:, :6]
    np.testing.assert_allclose(tr.mean(axis=0), 0, atol=1e-10)
    np.testing.assert_allclose(tr.std(axis=0, ddof=1), 1, atol=1e-10)
    assert not np.allclose(X[sp.test][:, :6].mean(axis=0), 0, atol=1e-4)
    np.testing.assert_array_equal(X[:, 6:], adult.X[:, 6:])   # one-hot columns untouched
    assert (sp.full_train.size, sp.train.size, sp.post.size, sp.test.size) == (33_916, 22_610, 11_306, 11_306)
