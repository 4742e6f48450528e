"""The errata checks on the released DP-FERMI points (issue 22): the closed-form bound and the flags."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from repro.studies.dpfermi.released_errata import flag_released_points, max_sample_std

CURVES = Path(__file__).parents[3] / "experiments" / "reference_data" / "dpfermi_released_curves.csv"


def test_bound_is_attained_by_one_nonzero_value() -> None:
    for n in (2, 5, 15):
        x = np.zeros(n)
        x[0] = n * 0.3
        assert np.std(x, ddof=1) == pytest.approx(max_sample_std(0.3, n))
    assert max_sample_std(1.0, 15) == pytest.approx(math.sqrt(15))


def test_bound_holds_for_random_nonnegative_samples() -> None:
    rng = np.random.default_rng(0)
    for _ in range(2000):
        n = int(rng.integers(2, 30))
        x = rng.exponential(size=n) * (rng.random(n) < rng.random())
        assert np.std(x, ddof=1) <= max_sample_std(float(x.mean()), n) + 1e-12


def test_bound_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        max_sample_std(0.1, 1)
    with pytest.raises(ValueError):
        max_sample_std(-0.1, 5)


def _pt(eps, knob, err, vio, lo, hi, dataset="adult"):
    return dict(dataset=dataset, fairness="eo", epsilon=eps, method="dp-fermi", knob=knob, point=0,
                error=err, violation=vio, band_lower=lo, band_upper=hi)


def test_flags_on_a_constructed_table() -> None:
    df = pd.DataFrame([
        _pt(0.5, 0.0, 0.1653, 0.2291, 0.2096, 0.2486),   # same run reused (identical bands): not flagged
        _pt(1.0, 0.0, 0.1653, 0.2291, 0.2096, 0.2486),
        _pt(0.5, 0.5, 0.2375, 0.0017, -0.0234, 0.0269),  # band 14.8 x mean > sqrt(15); identical, bands differ
        _pt(1.0, 0.5, 0.2375, 0.0017, -0.0232, 0.0267),
        _pt(3.0, 0.5, 0.2375, 0.0017, -0.0181, 0.0216),
        _pt(3.0, 0.25, 0.1800, 0.0300, 0.0200, 0.0400),  # ordinary point
    ])
    out = flag_released_points(df, n_runs=15, all_negative_error={"adult": 0.2381})
    assert len(out) == 3
    assert set(out["knob"]) == {0.5}
    assert all("impossible-band" in r and "identical-across-epsilon" in r and "near-trivial" in r
               for r in out["reasons"])
    assert out["not_reproducible"].all()


def test_points_equal_up_to_rounding_are_not_flagged() -> None:
    df = pd.DataFrame([_pt(0.5, 0.125, 0.1701, 0.1394, 0.1181, 0.1608), _pt(1.0, 0.125, 0.1701, 0.1395, 0.1182, 0.1608)])
    assert flag_released_points(df, n_runs=15).empty


def test_near_trivial_alone_is_not_an_erratum() -> None:
    df = pd.DataFrame([_pt(1.0, 1.5, 0.2160, 0.0, 0.0, 0.0, dataset="credit-card")])
    out = flag_released_points(df, n_runs=15, all_negative_error={"credit-card": 0.2160})
    assert list(out["reasons"]) == ["near-trivial"] and not out["not_reproducible"].any()


def test_released_figure9_points_at_high_lambda_are_flagged() -> None:
    curves = pd.read_csv(CURVES)
    fig9 = curves[(curves.dataset == "adult") & (curves.fairness == "eo") & (curves.method == "dp-fermi")]
    out = flag_released_points(fig9, n_runs=15, all_negative_error={"adult": 0.2381})
    bad = out[out["not_reproducible"]]
    # every released point at lambda >= 0.375 is flagged, and nothing at lambda <= 0.25
    high = fig9[fig9["knob"] >= 0.375]
    assert len(bad) == len(high) > 0
    assert (bad["knob"] >= 0.375).all()
