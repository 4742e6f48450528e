"""COMPAS loader (repro.datasets.compas): ProPublica filters and FairProjection preprocessing.

Spec: seed-003-thesis.md §6.4 (COMPAS loader).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from repro.datasets import compas


def _raw(rows: list[dict]) -> pd.DataFrame:
    base = {"age": 30, "c_charge_degree": "F", "race": "Caucasian", "sex": "Male", "priors_count": 1,
            "days_b_screening_arrest": 0.0, "is_recid": 1, "c_jail_in": "2013-01-01 10:00:00",
            "c_jail_out": "2013-01-03 09:00:00", "decile_score": 5}
    return pd.DataFrame([{**base, **r} for r in rows])


def test_filters_and_encodings_on_a_hand_made_table() -> None:
    raw = _raw([
        {},                                                         # kept
        {"days_b_screening_arrest": 30.0, "race": "African-American", "sex": "Female", "c_charge_degree": "M",
         "is_recid": 0},                                            # kept (boundary 30)
        {"days_b_screening_arrest": -30.0},                         # kept (boundary −30)
        {"days_b_screening_arrest": 31.0},                          # dropped: > 30
        {"days_b_screening_arrest": -31.0},                         # dropped: < −30
        {"days_b_screening_arrest": np.nan},                        # dropped: missing
        {"is_recid": -1},                                           # dropped: case not found
        {"c_charge_degree": "O"},                                   # dropped: ordinary traffic offence
        {"race": "Hispanic"},                                       # passes the standard filters only
    ])
    std = compas.standard_filter(raw)
    assert len(std) == 4
    assert std["length_of_stay"].tolist() == [1, 1, 1, 1]          # 1 day 23 h → 1 whole day
    df = compas.filter_compas(raw)
    assert len(df) == 3
    assert df["race"].tolist() == [1, 0, 1]                         # Caucasian = 1
    assert df["gender"].tolist() == [1, 0, 1]                       # Male = 1
    assert df["c_charge_degree"].tolist() == [1, -1, 1]             # F = 1, M = −1
    assert df["is_recid"].tolist() == [1, 0, 1]
    assert "days_b_screening_arrest" not in df and "c_jail_in" not in df


@pytest.mark.data
def test_known_row_counts_on_the_canonical_file(data_mirror, tmp_path_factory, monkeypatch) -> None:
    monkeypatch.setenv("REPRO_DATA_DIR", str(tmp_path_factory.mktemp("data")))
    from repro.datasets.store import fetch

    raw = pd.read_csv(fetch(compas.COMPAS_SOURCE), index_col=0)
    assert len(raw) == 7214
    assert len(compas.standard_filter(raw)) == 6172
    df = compas.filter_compas(raw)
    assert len(df) == 5278
    assert set(df["race"]) == {0, 1}
    # African-American / Caucasian counts after the filters, counted independently on the raw frame.
    keep = (raw["days_b_screening_arrest"].abs() <= 30) & (raw["is_recid"] != -1) & (raw["c_charge_degree"] != "O")
    counts = raw.loc[keep, "race"].value_counts()
    assert int((df["race"] == 0).sum()) == counts["African-American"]
    assert int((df["race"] == 1).sum()) == counts["Caucasian"]
    data = compas.load_compas()
    assert data.X.shape == (5278, len(compas.FEATURES))
    np.testing.assert_array_equal(data.X[:, data.s_column], data.s)
