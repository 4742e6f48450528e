"""Group-fairness and accuracy metrics for binary predictions (evaluated with the TRUE attribute).

The one home of the classifier gaps for k groups (every study uses these): statistical parity,
equal opportunity, mean equalized odds and DP-FERMI's equalized-odds violation, plus the signed
binary SP/EO differences of Arcolezi et al. Argument order is always (predictions, groups[, labels]).

Spec: seed-003-thesis.md §1.2 (Definitions 3–5: equal-opportunity gap, statistical-parity gap, mean
equalized-odds gap, each the max over group pairs, i.e. max − min over groups), §3.4 and L4 (signed
binary forms); seed-004-dpfermi.md (11) for the equalized-odds violation.
"""

from __future__ import annotations

import numpy as np

from repro.errors import InvalidParameterError

__all__ = ["accuracy", "group_rates", "sp_gap", "tpr_fpr", "eo_gap", "meo_gap", "eq_odds_gap", "sp_signed",
           "eo_signed"]


def _check(pred: np.ndarray, group: np.ndarray, y: np.ndarray | None = None) -> None:
    if pred.shape != group.shape or (y is not None and y.shape != pred.shape):
        raise InvalidParameterError(
            f"predictions, groups and labels must have the same shape; got {pred.shape}, {group.shape}"
            + ("" if y is None else f", {y.shape}") + ".")


def accuracy(pred: np.ndarray, y: np.ndarray) -> float:
    """Share of ``pred == y``."""
    pred, y = np.asarray(pred), np.asarray(y)
    if pred.shape != y.shape or pred.size == 0:
        raise InvalidParameterError(f"pred and y must be non-empty with equal shapes; got {pred.shape}, {y.shape}.")
    return float(np.mean(pred == y))


def group_rates(pred: np.ndarray, group: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """P(Ŷ=1 | A=a [, mask]) for every group a present (NaN for an empty group); ordered by a."""
    pred, group = np.asarray(pred), np.asarray(group)
    _check(pred, group)
    if mask is not None:
        pred, group = pred[mask], group[mask]
    k = int(group.max()) + 1 if group.size else 0
    counts = np.bincount(group, minlength=k).astype(float)
    pos = np.bincount(group, weights=pred.astype(float), minlength=k)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, pos / np.maximum(counts, 1), np.nan)


def _spread(rates: np.ndarray) -> float:
    r = rates[~np.isnan(rates)]
    return float(r.max() - r.min()) if r.size else float("nan")


def sp_gap(pred: np.ndarray, group: np.ndarray) -> float:
    """Statistical-parity gap Δ_SP = max_{a,a′} |P(Ŷ=1|A=a) − P(Ŷ=1|A=a′)| (Definition 4)."""
    return _spread(group_rates(pred, group))


def tpr_fpr(pred: np.ndarray, group: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-group true- and false-positive rates (arrays indexed by group)."""
    pred, group, y = np.asarray(pred), np.asarray(group), np.asarray(y)
    _check(pred, group, y)
    k = int(group.max()) + 1
    out = []
    for label in (1, 0):
        sel = y == label
        counts = np.bincount(group[sel], minlength=k).astype(float)
        pos = np.bincount(group[sel], weights=pred[sel].astype(float), minlength=k)
        with np.errstate(invalid="ignore", divide="ignore"):
            out.append(np.where(counts > 0, pos / np.maximum(counts, 1), np.nan))
    return out[0], out[1]


def eo_gap(pred: np.ndarray, group: np.ndarray, y: np.ndarray) -> float:
    """Equal-opportunity gap: max − min over groups of the TPR (Definition 3)."""
    return _spread(tpr_fpr(pred, group, y)[0])


def meo_gap(pred: np.ndarray, group: np.ndarray, y: np.ndarray) -> float:
    """Mean equalized-odds gap max_{a,a′} ½(|ΔTPR| + |ΔFPR|) (Definition 5)."""
    tpr, fpr = tpr_fpr(pred, group, y)
    ok = ~(np.isnan(tpr) | np.isnan(fpr))
    tpr, fpr = tpr[ok], fpr[ok]
    if tpr.size == 0:
        return float("nan")
    return float(np.max(0.5 * (np.abs(tpr[:, None] - tpr[None, :]) + np.abs(fpr[:, None] - fpr[None, :]))))


def eq_odds_gap(pred: np.ndarray, group: np.ndarray, y: np.ndarray) -> float:
    """Equalized-odds violation max(ΔTPR, ΔFPR) (max − min over groups), as DP-FERMI's plots use."""
    tpr, fpr = tpr_fpr(pred, group, y)
    return float(max(_spread(tpr), _spread(fpr)))


def _binary_difference(rates: np.ndarray) -> float:
    if rates.size != 2:
        raise InvalidParameterError(f"signed gaps need a binary attribute (groups 0 and 1); got {rates.size} groups.")
    return float(rates[1] - rates[0])


def sp_signed(pred: np.ndarray, group: np.ndarray) -> float:
    """Signed binary SPD = P(Ŷ=1|A=1) − P(Ŷ=1|A=0) (Arcolezi et al.; spec seed-003 L4)."""
    return _binary_difference(group_rates(pred, group))


def eo_signed(pred: np.ndarray, group: np.ndarray, y: np.ndarray) -> float:
    """Signed binary EOD = TPR(A=1) − TPR(A=0) (Arcolezi et al.; spec seed-003 L4)."""
    return _binary_difference(tpr_fpr(pred, group, y)[0])
