"""DP-FERMI on the thesis tables' split: the one run of the three DP-FERMI method files (not a method itself).

Each file declares its row over the DP-FERMI estimator (:class:`repro.estimators.DPFermiClassifier`, a
:class:`repro.studies.methods.Learner` built by :func:`fermi_row`) with ``runner=`` :func:`run_fermi`. Logistic
regression on x only, trained on the whole 75 % part at the cell's λ. ``reference`` (also with the other group's
ERMI term, ``other_group``): the thesis's code path (engine config ``REFERENCE``) with the thesis's all-feature
noise formulas; ``strict-all``: the paper's math with per-sample clipping and noise calibrated by the accountant.
Spec: seed-003 §3.3; seed-004-dpfermi.md §4.3–§4.4.
"""

from __future__ import annotations

from repro.engine.trial import TrialOutput
from repro.errors import InvalidParameterError
from repro.estimators import DPFermiClassifier
from repro.fairness.metrics import accuracy, sp_gap
from repro.learners.unit import privacy_row
from repro.studies.methods import Declared, Learner, Param, Trial

_GROUP_INDEX = {"female": 0, "male": 1}


def _listed_first(group: str) -> int:
    """The index of the group the authors' code lists first (``fermi_code_group``): its 1×1 trace term survives."""
    return _GROUP_INDEX[str(group)]


def _listed_second(group: str) -> int:
    """The other group's index (what the code gives when pandas lists the other group first)."""
    return 1 - _GROUP_INDEX[str(group)]


#: the hyperparameters every DP-FERMI row reads from the experiment file
_HYPER = {"lam": Param("lambda"), "epochs": Param("epochs", int), "batch_size": Param("batch_size", int),
          "lr_theta": Param("fermi_lr_theta"), "lr_w": Param("fermi_lr_w")}


def fermi_row(variant: str, other_group: bool = False) -> Learner:
    """The estimator declaration of a DP-FERMI row of the tables: ``reference`` (the group listed first, or the
    other one with ``other_group``; the thesis's all-feature noise, privacy row σ_θ and σ_W) or ``strict-all``
    (per-sample clip ``strict_clip_norm``; privacy row z and its PLD / RDP ε)."""
    if variant == "strict-all" and not other_group:
        return Learner(DPFermiClassifier, params={**_HYPER, "clip_norm": Param("strict_clip_norm")},
                       fixed={"variant": "strict-all"},
                       reports={"noise_multiplier": "noise_multiplier", "eps_total": "epsilon_pld",
                                "eps_dpsgd_rdp": "epsilon_rdp"})
    if variant != "reference":
        raise InvalidParameterError(f"a thesis DP-FERMI row is 'reference' (either group) or 'strict-all'; got "
                                    f"{variant!r} (other_group={other_group}).")
    group = Param("fermi_code_group", _listed_second if other_group else _listed_first)
    return Learner(DPFermiClassifier, params={**_HYPER, "clip_norm": Param("fermi_lipschitz"),
                                              "w_radius": Param("fermi_w_radius"), "code_group": group},
                   fixed={"variant": "reference", "noise_scope": "all"}, reports=("sigma_theta", "sigma_w"))


def run_fermi(method: Declared, trial: Trial) -> TrialOutput:
    """One DP-FERMI record of the declared row ``method``: its estimator at the cell's (ε′, δ′) on the whole
    training part, scored on the test rows, with the unit's privacy columns and the declared guarantee's ε label."""
    ds, (sp, X), params = trial.ds, trial.parts, trial.params
    tr, learner = sp.full_train, method.learner
    [(_, est)] = learner.fit(X[tr], ds.y[tr], ds.s[tr], params, epsilon=float(params["eps_prime"]),
                             delta=float(params["delta"]), rng=trial.ctx.rng())
    pred = learner.predictions(est, X[sp.test])
    return TrialOutput(records=[{"method": method.name, "accuracy": accuracy(pred, ds.y[sp.test]),
                                 "sp_gap": sp_gap(pred, ds.s[sp.test]), "eps_label": method.guarantee.label.value,
                                 **privacy_row(est.configured_, **learner.reports)}])
