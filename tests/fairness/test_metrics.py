"""Fairness metrics on hand-made tables (spec seed-003 §1.2, Definitions 3–5)."""

from __future__ import annotations

import numpy as np
import pytest

from repro.errors import InvalidParameterError
from repro.fairness.metrics import (
    accuracy,
    eo_gap,
    eo_signed,
    eq_odds_gap,
    group_rates,
    meo_gap,
    sp_gap,
    sp_signed,
    tpr_fpr,
)

# group 0: 4 rows, predictions 1,1,0,0 (rate 1/2); group 1: 5 rows, 1,0,0,0,0 (rate 1/5)
PRED = np.array([1, 1, 0, 0, 1, 0, 0, 0, 0])
GROUP = np.array([0, 0, 0, 0, 1, 1, 1, 1, 1])
Y = np.array([1, 0, 1, 0, 1, 1, 0, 0, 0])


def test_sp_gap_hand_table() -> None:
    np.testing.assert_allclose(group_rates(PRED, GROUP), [0.5, 0.2])
    assert sp_gap(PRED, GROUP) == pytest.approx(0.3)
    assert sp_gap(PRED, 1 - GROUP) == pytest.approx(0.3)  # the encoding of A does not matter
    assert sp_gap(np.ones(4, int), np.array([0, 1, 2, 2])) == 0.0


def test_sp_gap_three_groups_is_max_minus_min() -> None:
    pred = np.array([1, 0, 1, 1, 0, 0])
    grp = np.array([0, 0, 1, 1, 2, 2])
    assert sp_gap(pred, grp) == pytest.approx(1.0)


def test_tpr_fpr_eo_meo_hand_table() -> None:
    tpr, fpr = tpr_fpr(PRED, GROUP, Y)
    # group 0: positives rows 0,2 -> preds 1,0 (TPR 1/2); negatives rows 1,3 -> 1,0 (FPR 1/2)
    # group 1: positives rows 4,5 -> 1,0 (TPR 1/2); negatives rows 6,7,8 -> 0 (FPR 0)
    np.testing.assert_allclose(tpr, [0.5, 0.5])
    np.testing.assert_allclose(fpr, [0.5, 0.0])
    assert eo_gap(PRED, GROUP, Y) == pytest.approx(0.0)
    assert meo_gap(PRED, GROUP, Y) == pytest.approx(0.25)
    assert eq_odds_gap(PRED, GROUP, Y) == pytest.approx(0.5)
    assert accuracy(PRED, Y) == pytest.approx(6 / 9)


def test_shape_mismatch_is_reported() -> None:
    with pytest.raises(InvalidParameterError, match="same shape"):
        sp_gap(PRED, GROUP[:-1])


def test_classifier_gaps_by_hand() -> None:
    a = np.array([0, 0, 0, 0, 1, 1, 1, 1, 2, 2])
    y = np.array([1, 1, 0, 0, 1, 1, 1, 0, 1, 0])
    yhat = np.array([1, 0, 0, 0, 1, 1, 1, 1, 0, 1])
    # positive rates 0.25, 1.0, 0.5 ; TPRs 0.5, 1.0, 0.0
    assert sp_gap(yhat, a) == pytest.approx(0.75)
    assert eo_gap(yhat, a, y) == pytest.approx(1.0)
    m = a < 2
    assert sp_signed(yhat[m], a[m]) == pytest.approx(0.75)
    assert eo_signed(yhat[m], a[m], y[m]) == pytest.approx(0.5)
    assert sp_signed(yhat[m], 1 - a[m]) == pytest.approx(-0.75)
