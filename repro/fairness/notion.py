"""The fairness notion a learner targets and a figure scores, as one object that owns its metric
(fairlearn's ``DemographicParity()`` / ``EqualizedOdds()`` constraints are the model).

Spec: seed-004-dpfermi.md (10) (demographic-parity violation: the largest gap of P(Ŷ = 1 | S = a) over groups)
and (11) (equalized-odds violation: the same within each Y = y, the larger of the two).
"""

from __future__ import annotations

import enum

import numpy as np

from repro.errors import InvalidParameterError
from repro.fairness.metrics import eq_odds_gap, sp_gap

__all__ = ["Fairness"]


class Fairness(enum.StrEnum):
    """``dp`` (demographic parity) or ``eo`` (equalized odds). A ``str`` enum, so it equals (and hashes as) its
    value wherever the experiment files and configurations carry the text."""

    DP = "dp"
    EO = "eo"

    @classmethod
    def of(cls, value: object) -> Fairness:
        """``value`` as a notion; anything else is a one-line error naming the choices."""
        try:
            return cls(value)
        except ValueError:
            raise InvalidParameterError(f"fairness must be 'dp' or 'eo'; got {value!r}.") from None

    def violation(self, pred: np.ndarray, s: np.ndarray, y: np.ndarray) -> float:
        """This notion's violation of (possibly expected) 0/1 predictions: (10) or (11)."""
        return sp_gap(pred, s) if self is Fairness.DP else eq_odds_gap(pred, s, y)

    @property
    def describes(self) -> str:
        """The axis label of its violation in figures."""
        return "Demographic parity violation" if self is Fairness.DP else "Equalized odds violation"
