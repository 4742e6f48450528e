"""What a per-row, per-model ε means for a person and for a set of released models.

Every guarantee in :mod:`repro.privacy.guarantee` is stated for one *row* (one record) and one trained
model. Two facts of our data and engines change what that means, and the privacy tables say both:

**Several rows per person.** Where a person contributes ``k`` rows (the authors' Adult file writes
adult.data's rows twice; Parkinsons holds up to 168 voice recordings per subject, and sex is a
per-subject attribute), the neighbours that change one person differ in ``k`` rows. Group privacy
(Dwork & Roth 2014, Thm 2.2 for ε; chaining the (ε, δ) inequality ``k`` times for δ) gives, for an
(ε, δ)-DP mechanism,

    (k·ε,  δ·Σ_{i=0}^{k−1} e^{i·ε})-DP  for neighbours that differ in k rows,

which :func:`group_privacy` computes. The bound is generic (no accountant can do worse for a person);
for large ``k`` it is vacuous, and the tables say so rather than hide it.

**Models trained on shared noise.** The DP-FERMI engine trains the λ grid of a trial (and its
hyperparameter settings) in one pass with the *same* batches and standard-normal noise draws, scaled
per model (:func:`repro.learners.dp_fermi.train_dp_fermi_batch`). Each model alone has its stated ε,
but the noise cancels in combinations of models (after one step, θ_λ₁ − θ_λ₂ is noiseless for the
strict-all engine), so a release of several models of one trial is not covered by any finite ε:
:data:`SHARED_NOISE`. Private-Fair-Greedy's (ε, δ, α) configurations of one trial share their regression
and rank noise draws in the same way; :func:`shared_noise` words the caveat for both.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["group_privacy", "per_person", "privacy_unit", "shared_noise", "ONE_ROW_PER_PERSON", "SHARED_NOISE"]

#: the unit of a dataset whose loader states none: a row is a person
ONE_ROW_PER_PERSON = (1, "one row per person")



def shared_noise(unit: str, which: str, how: str) -> str:
    """The joint-release caveat of a privacy row whose ``unit``s (models, configurations: ``which`` of one
    trial) ``how`` (share what noise): each has its ε, a release of several of them has none (module docstring)."""
    return f"ε per {unit}: the {unit}s of one trial ({which}) {how}, so a release of several of them is not covered by ε"


#: caveat of every DP-FERMI privacy row: the models of a trial were trained together on shared noise draws
SHARED_NOISE = shared_noise("model", "its λ grid and hyperparameter settings",
                            "are trained on the same batches and noise draws")


def group_privacy(epsilon: float, delta: float, k: int) -> tuple[float, float]:
    """(ε_k, δ_k) = (k·ε, δ·Σ_{i<k} e^{iε}) for neighbours that differ in ``k`` rows, of an (ε, δ)-DP
    mechanism (module docstring). ``k = 1`` returns (ε, δ); a non-finite ε stays non-finite."""
    if k < 1 or int(k) != k:
        raise ValueError(f"k must be a positive integer; got {k!r}")
    if not (epsilon >= 0 and delta >= 0):
        raise ValueError(f"need epsilon >= 0 and delta >= 0; got {epsilon!r}, {delta!r}")
    k = int(k)
    if math.isinf(epsilon):
        return math.inf, delta if k == 1 else math.inf
    if delta == 0:
        return k * epsilon, 0.0
    if k * epsilon > 700:  # e^{kε} overflows a float: δ_k is astronomically above 1 (vacuous)
        return k * epsilon, math.inf
    # Σ_{i<k} e^{iε} = (e^{kε} − 1)/(e^ε − 1), written with expm1 for small ε (k when ε = 0)
    total = float(k) if epsilon == 0 else math.expm1(k * epsilon) / math.expm1(epsilon)
    return k * epsilon, delta * total


def privacy_unit(dataset: Any) -> tuple[int, str]:
    """(most rows of one person, what a row is) of a loaded dataset: its loader's ``extra["rows_per_person"]``
    and ``extra["privacy_unit"]`` (the authors' Adult file, Parkinsons), else :data:`ONE_ROW_PER_PERSON`."""
    extra = getattr(dataset, "extra", None) or {}
    if "rows_per_person" not in extra:
        return ONE_ROW_PER_PERSON
    return int(extra["rows_per_person"]), str(extra["privacy_unit"])


def per_person(epsilon: float, delta: float, dataset: Any) -> dict[str, Any]:
    """The columns a privacy table adds for its data's privacy unit (:func:`privacy_unit`):
    ``rows_per_person``, the per-person (ε, δ) of :func:`group_privacy`, and ``privacy_unit`` in words."""
    rows, unit = privacy_unit(dataset)
    eps_k, delta_k = group_privacy(float(epsilon), float(delta), rows)
    return {"rows_per_person": rows, "eps_per_person": eps_k, "delta_per_person": delta_k, "privacy_unit": unit}
