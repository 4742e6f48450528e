"""Adult reconstruction processing reproduces the reference pipeline's derived file exactly.

Spec: ../shared/specs/seed-003-thesis.md §6.1 (Exact files).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from repro.datasets.adult_reconstruction import COLUMNS, load_adult_reconstruction, process_raw
from repro.errors import InvalidParameterError


@pytest.fixture
def mirror_env(data_mirror, tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_DATA_MIRROR", str(data_mirror))
    monkeypatch.setenv("REPRO_DATA_DIR", str(tmp_path / "data"))
    load_adult_reconstruction.cache_clear()
    yield
    load_adult_reconstruction.cache_clear()


@pytest.mark.data
def test_raw_processing_equals_derived_reference_file(mirror_env) -> None:
    raw = load_adult_reconstruction("raw")
    ref = load_adult_reconstruction("derived")
    assert raw.attrs["source"] == "adult-reconstruction"
    assert "derived" in ref.attrs["source"]
    assert list(raw.columns) == COLUMNS
    assert raw.shape == (45_849, 11)
    pd.testing.assert_frame_equal(raw, ref, check_dtype=False)
    # spec §6.1 counts
    assert raw["gender"].value_counts().to_dict() == {1: 31_004, 0: 14_845}
    assert raw["race"].value_counts().to_dict() == {4: 39_521, 2: 4_236, 1: 1_303, 0: 436, 3: 353}
    assert raw["income"].value_counts().to_dict() == {1: 23_738, 0: 22_111}
    assert raw.nunique().to_dict() == {"age": 74, "workclass": 7, "education": 16, "marital-status": 7,
                                       "occupation": 14, "native-country": 41, "relationship": 6,
                                       "hours-per-week": 96, "gender": 2, "race": 5, "income": 2}


def test_process_raw_on_a_tiny_table() -> None:
    raw = pd.DataFrame({
        "age": [30, 20, 40, 20], "workclass": ["Private", "?", "State-gov", "Private"],
        "education": ["HS", "BA", "HS", "BA"], "marital-status": ["M", "S", "M", "S"],
        "occupation": ["x", "y", "y", "x"], "native-country": ["US", "US", "?", "MX"],
        "relationship": ["H", "W", "H", "W"], "hours-per-week": [40, 20, 60, 40],
        "gender": ["Male", "Female", "Male", "Female"], "race": ["White", "Black", "White", "White"],
        "income": [26_000, 30_000, 50_000, 26_001], "capital-gain": [0, 0, 0, 0],
    })
    out = process_raw(raw)
    assert len(out) == 2  # rows with '?' dropped
    assert out["income"].tolist() == [0, 1]   # strictly greater than 26,000
    assert out["gender"].tolist() == [1, 0]
    assert out["age"].tolist() == [1, 0]      # rank codes
    assert np.issubdtype(out["race"].dtype, np.integer)
    with pytest.raises(InvalidParameterError, match="lacks columns"):
        process_raw(raw.drop(columns=["race"]))


def test_bad_source_name() -> None:
    with pytest.raises(InvalidParameterError, match="source"):
        load_adult_reconstruction("web")
