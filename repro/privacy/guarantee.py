"""What a mechanism or learner promises: one frozen object next to its code (issue 20, item 4).

Every ε the project reports carries one of three labels (README, "Privacy labels"):

``ACCOUNTED``
    A proof and an accountant back it: the neighbouring relation, clipping and sampling the
    accountant assumes are exactly what the code does.
``NOMINAL``
    The paper's formula, not a guarantee (e.g. a Lipschitz bound the code does not enforce).
``PUBLIC_STATISTICS``
    Accounted, but statistics of the private training data (group sizes, P̂_S, feature means and
    standard deviations) are treated as public; the caveat says which.
``NON_PRIVATE``
    No privacy claim (ε = ∞).
``USER_DECLARED``
    Declared by a user's method (``repro run --with``); the project has not checked it.

Modelled on ``dp_accounting``'s ``NeighboringRelation`` (an enum, not a string).
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, replace

__all__ = ["Guarantee", "Label", "Neighbouring", "NON_PRIVATE", "is_user_declared", "is_nominal", "fails_when_violated", "compose", "STANDARDISED_FEATURES"]


class Label(enum.StrEnum):
    """How much an ε can be trusted (see the module docstring)."""

    ACCOUNTED = "accounted"
    NOMINAL = "nominal"
    PUBLIC_STATISTICS = "public-statistics caveat"
    NON_PRIVATE = "non-private"
    USER_DECLARED = "declared by the user"



class Neighbouring(enum.StrEnum):
    """Which datasets the guarantee calls neighbours."""

    ADD_OR_REMOVE_ONE = "add or remove one record"
    REPLACE_ONE = "replace one record"
    REPLACE_SENSITIVE_ATTRIBUTE = "replace one record's sensitive attribute"
    LOCAL = "local (each user's report)"
    NONE = "none"


@dataclass(frozen=True)
class Guarantee:
    """A privacy guarantee: (ε, δ) under ``relation``, how far it is backed (``label``), and why.

    Parameters
    ----------
    epsilon, delta
        The privacy parameters (``math.inf`` for none).
    label
        :class:`Label`.
    relation
        :class:`Neighbouring`.
    protects
        What is protected, e.g. ``"all features and the label"`` or ``"the sensitive attribute"``.
    caveat
        Why the label is not ``ACCOUNTED`` (required for every other label but ``NON_PRIVATE``).
    accountant
        How ε was computed (e.g. ``"PLD (dp_accounting)"``, ``"exact"``, ``"paper formula"``).
    """

    epsilon: float
    delta: float
    label: Label
    relation: Neighbouring
    protects: str = "every feature and the label"
    caveat: str = ""
    accountant: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.label, Label):
            object.__setattr__(self, "label", Label(self.label))
        if not isinstance(self.relation, Neighbouring):
            object.__setattr__(self, "relation", Neighbouring(self.relation))
        if math.isnan(self.epsilon) or self.epsilon <= 0:
            raise ValueError(f"a guarantee's epsilon must be > 0 (math.inf for none); got {self.epsilon}")
        if not 0 <= self.delta < 1:
            raise ValueError(f"a guarantee's delta must lie in [0, 1); got {self.delta}")
        if self.label not in (Label.ACCOUNTED, Label.NON_PRIVATE) and not self.caveat:
            raise ValueError(f"a {self.label.value!r} guarantee must say why in its caveat")

    def with_epsilon(self, epsilon: float, delta: float | None = None) -> Guarantee:
        """The same guarantee at another (ε, δ) (e.g. once a run's accountant has computed it)."""
        return replace(self, epsilon=epsilon, delta=self.delta if delta is None else delta)

    def describe(self) -> str:
        """One line for reports: ``ε = 1 (δ = 1e-05), accounted, add or remove one record``."""
        if self.label is Label.NON_PRIVATE:
            return "non-private"
        text = f"ε = {self.epsilon:g} (δ = {self.delta:g}), {self.label.value}, {self.relation.value}"
        return f"{text}; {self.caveat}" if self.caveat else text


NON_PRIVATE = Guarantee(math.inf, 0.0, Label.NON_PRIVATE, Neighbouring.NONE, protects="nothing")


#: Caveat of every learner fed by :mod:`repro.datasets.tabular`: numeric features are standardised with the
#: mean and std of the private training rows, which no accountant covers (issue 21, "Labelling gaps").
STANDARDISED_FEATURES = "numeric features standardised with the training rows' mean and std (treated as public)"

#: Weakest first: the label of a composition is the weakest of its parts.
_ORDER = (Label.USER_DECLARED, Label.NOMINAL, Label.PUBLIC_STATISTICS, Label.ACCOUNTED, Label.NON_PRIVATE)


def compose(*parts: Guarantee, relation: Neighbouring | None = None, protects: str | None = None) -> Guarantee:
    """Basic composition: ε and δ add, the label is the weakest of the parts', caveats are joined.

    Non-private parts contribute nothing. ``relation`` defaults to the first private part's (parts must
    agree unless it is given)."""
    private = [g for g in parts if g.label is not Label.NON_PRIVATE]
    if not private:
        return NON_PRIVATE
    rel = relation or private[0].relation
    if relation is None and any(g.relation is not rel for g in private):
        raise ValueError("composed guarantees use different neighbouring relations; pass relation=")
    label = min((g.label for g in private), key=_ORDER.index)
    caveats = list(dict.fromkeys(g.caveat for g in private if g.caveat))
    accountants = list(dict.fromkeys(g.accountant for g in private if g.accountant))
    return Guarantee(sum(g.epsilon for g in private), min(sum(g.delta for g in private), 0.999999), label, rel,
                     protects=protects or private[0].protects, caveat="; ".join(caveats),
                     accountant=" + ".join(accountants))


def is_user_declared(label: object) -> bool:
    """Whether a recorded ε label (a :class:`Label` or its text) marks a user's own method (``repro run --with``)."""
    return str(label) == Label.USER_DECLARED.value


def is_nominal(label: Label | str) -> bool:
    """Whether a recorded label (a :class:`Label` or its text, e.g. read back from a CSV) is nominal."""
    return Label(label) is Label.NOMINAL


def fails_when_violated(label: Label | str) -> bool:
    """Whether a beaten claim of this label is a violation (accounted, or public-statistics caveat: the
    accountant's promise), rather than a nominal formula exceeded."""
    return Label(label) in (Label.ACCOUNTED, Label.PUBLIC_STATISTICS)
