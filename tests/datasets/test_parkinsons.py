"""Parkinsons Telemonitoring loader (spec seed-004 §7.1)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from repro.datasets.parkinsons import (
    FEATURES,
    N_ROWS,
    RECORDINGS_PER_SUBJECT,
    build_parkinsons,
    load_parkinsons,
)
from repro.errors import DataUnavailableError
from repro.privacy.group import privacy_unit


@pytest.mark.data
def test_shape_label_group(data_mirror, isolated_data_env, monkeypatch) -> None:
    """5,875 × 19; median total_UPDRS 27.576 with 2,934 positives; 1,867 women (sex = 1)."""
    monkeypatch.setenv("REPRO_DATA_MIRROR", str(data_mirror))
    load_parkinsons.cache_clear()
    ds = load_parkinsons()
    assert (ds.n, ds.d) == (5_875, 19)
    assert ds.extra["median_total_UPDRS"] == pytest.approx(27.576)
    assert int(ds.y.sum()) == 2_934
    assert int(ds.s.sum()) == 1_867
    assert ds.feature_names == FEATURES and "motor_UPDRS" in FEATURES and "total_UPDRS" not in FEATURES
    assert ds.numeric_columns == tuple(range(19))
    raw = pd.read_csv(data_mirror / "parkinsons_updrs.data")
    assert privacy_unit(ds)[0] == RECORDINGS_PER_SUBJECT == int(raw["subject#"].value_counts().max())
    load_parkinsons.cache_clear()


def _tiny(n: int = N_ROWS) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.normal(size=(n, len(FEATURES))), columns=list(FEATURES))
    df["sex"] = np.arange(n) % 2
    df["total_UPDRS"] = np.arange(n, dtype=float)
    df["subject#"] = 1
    return df


def test_median_split_and_group_coding() -> None:
    ds = build_parkinsons(_tiny())
    assert int(ds.y.sum()) == N_ROWS // 2          # strictly above the median of 0..n−1
    assert ds.s.tolist()[:4] == [0, 1, 0, 1]
    assert "subject#" not in ds.feature_names


def test_rejects_bad_input() -> None:
    with pytest.raises(DataUnavailableError, match="lacks columns"):
        build_parkinsons(_tiny().drop(columns=["PPE"]))
    bad = _tiny()
    bad.loc[0, "sex"] = 2
    with pytest.raises(DataUnavailableError, match="0/1"):
        build_parkinsons(bad)
    with pytest.raises(DataUnavailableError, match="5875 rows"):
        build_parkinsons(_tiny(100))
