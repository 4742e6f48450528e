"""Retired Adult loader (spec seed-004 §7.1, §11 item 11)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from repro.datasets.retired_adult import (
    CATEGORICAL,
    N_FEATURES,
    N_ROWS,
    NUMERIC,
    build_retired_adult,
    load_retired_adult,
)
from repro.errors import DataUnavailableError


@pytest.mark.data
def test_shape_label_group_and_features(data_mirror, isolated_data_env, monkeypatch) -> None:
    monkeypatch.setenv("REPRO_DATA_MIRROR", str(data_mirror))
    load_retired_adult.cache_clear()
    ds = load_retired_adult()
    assert (ds.n, ds.d) == (N_ROWS, N_FEATURES) == (45_849, 101)
    # 3,682 of 49,531 rows carry a '?'; 24.66 % earn more than 50,000; 14,845 women.
    assert int(ds.y.sum()) == round(0.24661388470849965 * N_ROWS)
    assert int((ds.s == 0).sum()) == 14_845 and int((ds.s == 1).sum()) == 31_004
    assert ds.feature_names[:5] == NUMERIC and ds.numeric_columns == (0, 1, 2, 3, 4)
    assert "gender" not in " ".join(ds.feature_names) and "income" not in " ".join(ds.feature_names)
    onehot = ds.X[:, 5:]
    assert set(np.unique(onehot)) == {0.0, 1.0}
    assert np.all(onehot.sum(axis=1) == len(CATEGORICAL))       # exactly one level per categorical
    assert not any("?" in f for f in ds.feature_names)
    load_retired_adult.cache_clear()


def _tiny() -> pd.DataFrame:
    return pd.DataFrame({
        "hours-per-week": [40, 20, 50], "age": [30, 40, 50], "capital-gain": [0, 0, 100],
        "capital-loss": [0, 0, 0], "workclass": ["Private", "?", "State-gov"], "education": ["HS", "BA", "MA"],
        "education-num": [9, 13, 14], "marital-status": ["M", "S", "M"], "relationship": ["H", "W", "H"],
        "race": ["White", "Black", "White"], "gender": ["Male", "Female", "Female"],
        "native-country": ["US", "US", "US"], "income": [60_000, 10_000, 50_000], "occupation": ["A", "B", "C"]})


def test_build_checks_the_shape() -> None:
    """The tiny frame loses its '?' row and cannot have 101 features: the loader says so."""
    with pytest.raises(DataUnavailableError, match="45849 rows × 101 features"):
        build_retired_adult(_tiny())


def test_build_rejects_missing_columns_and_bad_gender() -> None:
    with pytest.raises(DataUnavailableError, match="lacks columns"):
        build_retired_adult(_tiny().drop(columns=["income"]))
    bad = _tiny()
    bad.loc[0, "gender"] = "X"
    with pytest.raises(DataUnavailableError, match="gender"):
        build_retired_adult(bad)


def test_label_threshold_is_strict(monkeypatch) -> None:
    """income > 50,000 (50,000 itself is negative), '?' rows dropped, Male = 1."""
    import repro.datasets.retired_adult as mod

    monkeypatch.setattr(mod, "N_ROWS", 2)
    monkeypatch.setattr(mod, "N_FEATURES", 5 + 2 + 2 + 1 + 1 + 1 + 1 + 2)
    ds = mod.build_retired_adult(_tiny())
    assert ds.y.tolist() == [1, 0] and ds.s.tolist() == [1, 0]
    assert ds.X[:, :5].tolist() == [[30, 40, 9, 0, 0], [50, 50, 14, 100, 0]]
