"""UCI Default of Credit Card Clients loader (spec seed-003 §3.1, P5, P9). Needs the data mirror."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from repro.datasets.credit_card import load_credit_card

pytestmark = pytest.mark.data


@pytest.fixture
def credit(data_mirror: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("REPRO_DATA_MIRROR", str(data_mirror))
    monkeypatch.setenv("REPRO_DATA_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("REPRO_OFFLINE", "1")
    load_credit_card.cache_clear()
    yield load_credit_card()
    load_credit_card.cache_clear()


def test_shape_counts_and_source(credit) -> None:
    assert credit.X.shape == (30_000, 85)
    # manifest marginals: 6,636 defaults, 11,888 men
    assert int(credit.y.sum()) == 6_636
    assert int(credit.s.sum()) == 11_888
    assert credit.numeric_columns == tuple(range(14))
    assert np.mean(credit.X[:, 0]) == pytest.approx(167_484.32, abs=0.01)   # LIMIT_BAL
    assert sum(n.startswith("EDUCATION=") for n in credit.feature_names) == 4
    assert sum(n.startswith("MARRIAGE=") for n in credit.feature_names) == 3
    assert np.all(credit.X[:, 14:].sum(axis=1) == 8)
    # the mirror only has the derived TSV: the result must say so
    if credit.source == "credit-card-tsv":
        assert credit.canonical is False and credit.description.startswith("DERIVED SOURCE")
