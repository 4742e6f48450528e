"""DP-FERMI on the thesis tables' split: the one run of the three DP-FERMI method files (not a method itself).

Each file declares a :class:`Fermi` row (:meth:`repro.studies.methods.Method.declare` with ``runner=``
:func:`run_fermi`). Logistic regression on x only, trained on the whole 75 % part at the cell's λ.
``reference`` (also with the other group's ERMI term, ``other_group``): the thesis's code path (engine config
``REFERENCE``) with the thesis's all-feature noise formulas; ``strict-all``: the paper's math with per-sample
clipping and noise calibrated by the accountant. Spec: seed-003 §3.3; seed-004-dpfermi.md §4.3–§4.4.
"""

from __future__ import annotations

from dataclasses import dataclass

from repro.engine.trial import TrialOutput
from repro.errors import InvalidParameterError
from repro.fairness.metrics import accuracy, sp_gap
from repro.learners.dp_fermi_unit import configure, train_batch
from repro.learners.unit import privacy_row
from repro.privacy.dpfermi_noise import group_floor
from repro.studies.methods import Declared, Trial

_GROUP_INDEX = {"female": 0, "male": 1}


@dataclass(frozen=True)
class Fermi:
    """A DP-FERMI row of the tables: the learner unit's ``variant`` (``reference`` or ``strict-all``) and, for
    ``reference``, whether the other group's ERMI term survives (``other_group``; default: ``fermi_code_group``)."""

    variant: str
    other_group: bool = False

    def __post_init__(self) -> None:
        if self.variant not in ("reference", "strict-all") or (self.other_group and self.variant != "reference"):
            raise InvalidParameterError(f"a thesis DP-FERMI row is 'reference' (either group) or 'strict-all'; got {self}.")


def run_fermi(method: Declared, trial: Trial) -> TrialOutput:
    """One DP-FERMI record of the declared row ``method`` (its learner a :class:`Fermi`; its ε label the
    declared guarantee's)."""
    ds, (sp, X), params, rng = trial.ds, trial.parts, trial.params, trial.ctx.rng()
    row: Fermi = method.learner
    lam = float(params["lambda"])
    tr = sp.full_train
    n = tr.size
    epochs, batch = int(params["epochs"]), int(params["batch_size"])
    eps_prime, delta = float(params["eps_prime"]), float(params["delta"])
    hyper = dict(lam=lam, epochs=epochs, batch_size=batch, lr_theta=float(params["fermi_lr_theta"]),
                 lr_w=float(params["fermi_lr_w"]))
    if row.variant == "strict-all":
        c = configure("strict-all", n=n, epsilon=eps_prime, delta=delta,
                      clip_norm=float(params["strict_clip_norm"]), **hyper)
        extra = privacy_row(c, "noise_multiplier", eps_total="epsilon_pld", eps_dpsgd_rdp="epsilon_rdp")
    else:
        group = _GROUP_INDEX[str(params["fermi_code_group"])]
        if row.other_group:
            group = 1 - group
        c = configure("reference", n=n, epsilon=eps_prime, delta=delta, rho=group_floor(ds.s[tr]), noise_scope="all",
                      warn=False, code_group=group, clip_norm=float(params["fermi_lipschitz"]),
                      w_radius=float(params["fermi_w_radius"]), **hyper)
        extra = privacy_row(c, "sigma_theta", "sigma_w")
    res = train_batch(X[tr], ds.y[tr], ds.s[tr], [c.config], rng=rng)[0]
    pred = res.model.predict(X[sp.test])
    return TrialOutput(records=[{"method": method.name, "accuracy": accuracy(pred, ds.y[sp.test]),
                                 "sp_gap": sp_gap(pred, ds.s[sp.test]), "eps_label": method.guarantee.label.value,
                                 **extra}])
