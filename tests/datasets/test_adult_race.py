"""UCI Adult restricted to White/Black, race sensitive (repro.datasets.adult_race).

Spec: seed-003-thesis.md §6.4 (Adult loader of the FairProjection experiments), §10 L7.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from repro.datasets import adult_race


def test_processing_on_a_hand_made_table() -> None:
    rows = [
        [39, "State-gov", 77516, "Bachelors", 13, "Never-married", "Adm-clerical", "Not-in-family", "White", "Male",
         2174, 0, 40, "United-States", "<=50K"],
        [50, "?", 83311, "Bachelors", 13, "Married-civ-spouse", "?", "Husband", "Black", "Female", 0, 0, 13, "?",
         ">50K."],
        [38, "Private", 215646, "HS-grad", 9, "Divorced", "Handlers-cleaners", "Not-in-family", "Asian-Pac-Islander",
         "Male", 0, 0, 40, "India", ">50K"],
    ]
    df = adult_race.process_adult_race(pd.DataFrame(rows, columns=list(adult_race.COLUMNS)))
    assert len(df) == 2                                    # Asian-Pac-Islander dropped; '?' rows kept
    assert df["race"].tolist() == [1, 0]                   # White = 1
    assert df["gender"].tolist() == [1, 0]                 # Male = 1
    assert df["income"].tolist() == [0, 1]                 # '>50K.' of adult.test counts as positive
    for dropped in ("fnlwgt", "workclass", "occupation", "education", "native-country"):
        assert dropped not in df.columns
    assert df["marital-status_Never-married"].tolist() == [1, 0]
    assert df["relationship_Husband"].tolist() == [0, 1]
    assert df["education-num"].tolist() == [13, 13]


@pytest.mark.data
def test_row_counts_match_an_independent_count_of_the_raw_files(data_mirror, tmp_path_factory, monkeypatch) -> None:
    monkeypatch.setenv("REPRO_DATA_DIR", str(tmp_path_factory.mktemp("data")))
    from repro.datasets.store import fetch

    white = black = positive = 0
    for name, skip in (("adult-data", 0), ("adult-test", 1)):
        lines = fetch(name).read_text().splitlines()[skip:]
        for line in lines:
            fields = [f.strip() for f in line.split(",")]
            if len(fields) != 15:
                continue
            if fields[8] in ("White", "Black"):
                white += fields[8] == "White"
                black += fields[8] == "Black"
                positive += fields[14].startswith(">")
    df = adult_race.load_adult_race_frame()
    assert len(df) == white + black == 46447
    assert int(df["race"].sum()) == white
    assert int(df["income"].sum()) == positive
    data = adult_race.load_adult_race()
    assert data.X.shape == (46447, 20)
    np.testing.assert_array_equal(data.X[:, data.s_column], data.s)
    assert "income" not in data.feature_names
