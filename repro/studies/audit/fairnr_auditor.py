"""Exact audit of Private-FairNR's auditor step (``corrected`` mode; Cummings et al. 2019, seed-000-002 §5.5, §5.7).

The auditor releases λ ∈ {+C, −C} (and 0 with a slack ξ > 0) by the exponential mechanism on the payoffs
C(±v − ξ), v = Φ₊ of the round's sampled hypotheses, each payoff of sensitivity C·2/n under replace-one
(:func:`repro.theory.fairnr.auditor_exp_mech`); the claim is ε₀ per step (replace one record), composed with
the FTPL steps by the accountant of :func:`repro.theory.fairnr.guarantee`.

The audit computes the step's **exact** output law, read from the code itself: the generator handed to
``auditor_exp_mech`` records the probabilities of its one ``choice``. For two sampled datasets of types
(n + 4 and 2n + 4 records), every hypothesis h of the class (the round's input v = Φ₊(h); m = 1 is the worst case, an
average of several moves less) and slacks ξ ∈ {0, 0.05}, it compares the law on the dataset with the law on
each replace-one neighbour; audited = achievable = the largest exact ε. The note gives the sensitivity check:
the largest |Δv| over the neighbours against the 2/n the mechanism assumes (≤ 1 required).

With two options whose payoffs move in opposite directions the exponential mechanism spends its whole ε₀
(its factor 2 is for payoffs that may move together), so the audit reaches ε₀ where some neighbour moves v by
the full 2/n. Control: the mechanism told n·4 records (sensitivity 2/(4n)) under the claim ε₀.
"""

from __future__ import annotations

import numpy as np

from repro.privacy.profile import point_profile
from repro.studies.audit.bounds import exact_epsilon
from repro.studies.audit.mechanisms import AuditResult, Mechanism, _type_data
from repro.theory import expmech_learner as em
from repro.theory import fairnr as fnr

__all__ = ["auditor_law", "audit_fairnr_auditor", "FAIRNR_AUDITOR"]

#: slacks ξ of the audited auditor steps (0: the paper's two options; > 0 adds λ = 0)
SLACKS = (0.0, 0.05)
#: the control tells the mechanism this many times the records (its sensitivity that much too small)
CONTROL_FACTOR = 4


class _ChoiceRecorder:
    """Stands in for the generator: its ``choice`` (the only draw of the auditor step) records the
    probabilities it is given and returns option 0; any other draw fails loudly."""

    def __init__(self) -> None:
        self.p: np.ndarray | None = None

    def choice(self, a, size=None, replace=True, p=None, axis=0, shuffle=True):  # numpy's signature
        self.p = np.asarray(p, dtype=float)
        return 0


def auditor_law(v: float, C: float, slack: float, epsilon: float, n: int) -> np.ndarray:
    """The exact law of :func:`repro.theory.fairnr.auditor_exp_mech` over its options, read from its one draw."""
    rec = _ChoiceRecorder()
    fnr.auditor_exp_mech(v, C, slack, epsilon, n, rng=rec)  # type: ignore[arg-type]
    if rec.p is None:
        raise RuntimeError("auditor_exp_mech drew no choice; the audit cannot read its law.")
    return rec.p


def audit_fairnr_auditor(runs: int, rng: np.random.Generator, *, broken: bool = False, eps_step: float = 0.5,
                         n: int = 12, k: int = 2, C: float = 2.0) -> AuditResult:
    """The exact audit of the auditor step (module docstring). ``runs`` is unused."""
    hyp, _ = em.threshold_class(k)
    worst, worst_sens, sizes = 0.0, 0.0, []
    for size in (n, 2 * n):
        counts = em.sample_counts(em.logistic_population(k), size, rng=rng)
        counts[0, :, 0] += 2                            # both groups keep a negative record (Φ₊ defined)
        data, pred = _type_data(counts, hyp)
        nn = int(np.sum(counts))
        sizes.append(nn)
        n_told = CONTROL_FACTOR * nn if broken else nn
        phi = fnr.fp_violations(pred, data)
        for _, _, nb in em.replace_one_neighbours(counts):
            try:
                d1, _ = _type_data(nb, hyp)
                phi1 = fnr.fp_violations(pred, d1)
            except Exception:     # a neighbour without a negative record in a group: Φ₊ undefined there
                continue
            worst_sens = max(worst_sens, float(np.max(np.abs(phi - phi1))) / fnr.fp_violation_sensitivity(nn))
            for h in range(pred.shape[0]):
                for slack in SLACKS:
                    p0 = auditor_law(float(phi[h]), C, slack, eps_step, n_told)
                    p1 = auditor_law(float(phi1[h]), C, slack, eps_step, n_told)
                    worst = max(worst, exact_epsilon(np.log(p0), np.log(p1), 0.0))
    claim = fnr.guarantee("corrected", eps_step, 0.0)
    return AuditResult("fairnr-corrected-auditor-step", claim, worst, "exact: output laws read from the code",
                       worst, 1.0, 0, method="exact", broken=broken, profile=point_profile(eps_step, 0.0),
                       note=f"n = {sizes[0]} and {sizes[1]} (sampled), |H| = {hyp.shape[0]}, slacks "
                            f"{SLACKS}; sensitivity check: max |Δv| / (2/n) = {worst_sens:.3f} (≤ 1 required)"
                            + (f"; control: n passed as {CONTROL_FACTOR}n" if broken else ""))


#: the registry entry (the form of :data:`repro.studies.audit.mechanisms.MECHANISMS`)
FAIRNR_AUDITOR: dict[str, Mechanism] = {
    "fairnr-corrected-auditor-step": Mechanism(audit_fairnr_auditor, {"smoke": 0, "full": 0},
                                               f"sensitivity {CONTROL_FACTOR}× too small (n passed as {CONTROL_FACTOR}n)"),
}
