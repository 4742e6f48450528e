"""Machine-checked errata for the released DP-FERMI curve points (issue 22).

The released figure data (``experiments/reference_data/dpfermi_released_curves.csv``, spec seed-004
Appendix A) give, per point, the mean test error and violation over the runs and a band. Some points
cannot be what the released code produces; three checks say which and why:

``impossible-band``
    For n non-negative values with mean m the sample standard deviation s (ddof = 1) satisfies
    s ≤ √n · m, with equality only when one value is n·m and the others 0
    (Σx² ≤ (Σx)² = n²m², so s² = (Σx² − n m²)/(n − 1) ≤ n m²). A band whose half-width exceeds
    √n · m (read as mean ± std, spec seed-004 decision 9; an SEM or confidence-interval band would
    imply an even larger s) has no sample of n runs behind it.
``identical-across-epsilon``
    The same mean error to every released digit at two or more ε while the violation or the band differs
    by more than ``rounding``: the runs behind the points differ, yet their means over n runs on ~15,000
    test rows agree to every digit. Points that agree in everything up to rounding (one run reused for
    several ε, or runs the noise barely changes, as at λ ≤ 0.125 on Adult) are not flagged.
``near-trivial``
    Error within ``trivial_tolerance`` of the all-negative classifier's error on the authors' test split
    (and a small violation). Informational: such a classifier is a legitimate outcome where the code
    reaches it (e.g. Credit Card, DP-FERMI Figure 4); it is not a reason on its own.

A point flagged ``impossible-band`` or ``identical-across-epsilon`` is "not reproducible by the released
code"; the report lists it with its reasons instead of counting it as a miss.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

__all__ = ["max_sample_std", "flag_released_points", "NOT_REPRODUCIBLE", "REASONS"]

#: reasons that make a released point "not reproducible by the released code"
NOT_REPRODUCIBLE = ("impossible-band", "identical-across-epsilon")
REASONS = (*NOT_REPRODUCIBLE, "near-trivial")


def max_sample_std(mean: float, n: int) -> float:
    """Largest sample standard deviation (ddof = 1) of ``n`` ≥ 2 non-negative values with mean ``mean``: √n·mean."""
    if n < 2:
        raise ValueError(f"a sample standard deviation needs n >= 2 values; got n = {n}")
    if mean < 0:
        raise ValueError(f"the values are non-negative, so their mean is too; got {mean}")
    return math.sqrt(n) * mean


def flag_released_points(curves: pd.DataFrame, *, n_runs: int,
                         all_negative_error: Mapping[str, float] | None = None,
                         trivial_tolerance: float = 0.005, trivial_violation: float = 0.02,
                         rounding: float = 0.001) -> pd.DataFrame:
    """One row per flagged released point: the point's columns plus ``reasons`` (``;``-joined) and
    ``not_reproducible`` (True when a reason in :data:`NOT_REPRODUCIBLE` applies).

    Parameters
    ----------
    curves
        The released curves (columns dataset, fairness, epsilon, method, knob, point, error, violation,
        band_lower, band_upper).
    n_runs
        Runs behind each released mean (15 for the tabular figures, spec seed-004 §5).
    rounding
        Differences up to this are rounding (the released values have 4 decimals).
    all_negative_error
        Per dataset, the error of the all-negative classifier on the authors' test split (enables
        ``near-trivial``).
    """
    df = curves.reset_index(drop=True).copy()
    reasons: list[list[str]] = [[] for _ in range(len(df))]
    has_band = df["band_lower"].notna() & df["band_upper"].notna()
    half = (df["band_upper"] - df["band_lower"]) / 2
    for i in df.index[has_band]:
        v = float(df.at[i, "violation"])
        if v >= 0 and half[i] > max_sample_std(v, n_runs) + 1e-12:
            reasons[i].append("impossible-band")
    key = ["dataset", "fairness", "method", "knob"]
    for _, grp in df[has_band].groupby(key, dropna=False):
        for _, pts in grp.groupby("error"):
            spread = (pts[["violation", "band_lower", "band_upper"]].max()
                      - pts[["violation", "band_lower", "band_upper"]].min()).max()
            if pts["epsilon"].nunique() >= 2 and spread > rounding:
                for i in pts.index:
                    reasons[i].append("identical-across-epsilon")
    if all_negative_error:
        for i in df.index:
            ref = all_negative_error.get(str(df.at[i, "dataset"]))
            if ref is not None and abs(float(df.at[i, "error"]) - ref) <= trivial_tolerance \
                    and abs(float(df.at[i, "violation"])) <= trivial_violation:
                reasons[i].append("near-trivial")
    df["reasons"] = [";".join(r) for r in reasons]
    df["not_reproducible"] = [any(x in NOT_REPRODUCIBLE for x in r) for r in reasons]
    return df[df["reasons"] != ""].reset_index(drop=True)
