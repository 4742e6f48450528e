"""LSAC processing reproduces the reference pipeline's derived file exactly.

Spec: ../shared/specs/seed-003-thesis.md §6.1 (Exact files).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from repro.datasets.lsac import COLUMNS, load_lsac, process_raw
from repro.errors import InvalidParameterError


@pytest.fixture
def mirror_env(data_mirror, tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_DATA_MIRROR", str(data_mirror))
    monkeypatch.setenv("REPRO_DATA_DIR", str(tmp_path / "data"))
    load_lsac.cache_clear()
    yield
    load_lsac.cache_clear()


@pytest.mark.data
def test_raw_processing_equals_derived_reference_file(mirror_env) -> None:
    raw = load_lsac("raw")
    ref = load_lsac("derived")
    assert raw.attrs["source"] == "lsac-bar-pass"
    assert list(raw.columns) == COLUMNS
    assert raw.shape == (20_427, 7)
    pd.testing.assert_frame_equal(raw, ref, check_dtype=False)
    assert raw["gender"].value_counts().to_dict() == {1: 11_501, 0: 8_926}
    assert raw["fam_inc"].value_counts().to_dict() == {3: 9_035, 2: 7_321, 1: 1_980, 4: 1_676, 0: 415}
    assert raw["pass_bar"].value_counts().to_dict() == {1: 19_389, 0: 1_038}
    assert raw.nunique().to_dict() == {"fam_inc": 5, "gender": 2, "fulltime": 2, "race1": 2, "lsat": 37,
                                       "ugpa": 6, "pass_bar": 2}


def test_process_raw_rounding_and_dropna() -> None:
    raw = pd.DataFrame({
        "fam_inc": [1.0, 5.0, 3.0, 2.0], "gender": ["female", "male", "male", None],
        "fulltime": [1.0, 2.0, 1.0, 1.0], "race1": ["black", "white", "hisp", "white"],
        "lsat": [30.5, 31.5, 40.0, 20.0], "ugpa": [3.24, 3.26, 2.75, 3.0], "pass_bar": [1, 0, 1, 1],
        "other": [0, 0, 0, 0],
    })
    out = process_raw(raw)
    assert len(out) == 3                       # the row with a missing gender is dropped
    assert out["race1"].tolist() == [0, 1, 1]  # 1 = not black
    assert out["gender"].tolist() == [0, 1, 1]
    # lsat: 30.5 → 30 and 31.5 → 32 (half to even), codes among {30, 32, 40}
    assert out["lsat"].tolist() == [0, 1, 2]
    # ugpa: 3.24 → 3.0, 3.26 → 3.5, 2.75 → 3.0 (half to even on 5.5 → 6 → 3.0)
    assert out["ugpa"].tolist() == [0, 1, 0]
    assert np.issubdtype(out["fam_inc"].dtype, np.integer)
    with pytest.raises(InvalidParameterError, match="lacks columns"):
        process_raw(raw.drop(columns=["lsat"]))
