"""DP-FERMI on the thesis tables' split, shared by the three DP-FERMI method files (not a method itself).

Logistic regression on x only, trained on the whole 75 % part at the cell's λ. ``reference`` / ``other group
order``: the thesis's code path (engine config ``REFERENCE``) with the thesis's all-feature noise formulas;
``strict``: the paper's math with per-sample clipping and noise calibrated by the accountant.
Spec: seed-003 §3.3; seed-004-dpfermi.md §4.3–§4.4.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from repro.datasets.tabular import Split, TabularDataset
from repro.engine.trial import TrialOutput
from repro.fairness.metrics import accuracy, sp_gap
from repro.learners.dp_fermi_unit import configure, train_batch
from repro.privacy.accounting import dp_sgd_epsilon
from repro.privacy.dpfermi_noise import group_floor

_GROUP_INDEX = {"female": 0, "male": 1}


def run_fermi(name: str, path: str, eps_label: str, ds: TabularDataset, sp: Split, X: np.ndarray,
              params: dict[str, Any], rng: np.random.Generator) -> TrialOutput:
    """One DP-FERMI record; ``path`` is ``reference``, ``other-group`` or ``strict``."""
    lam = float(params["lambda"])
    tr = sp.full_train
    n = tr.size
    epochs, batch = int(params["epochs"]), int(params["batch_size"])
    eps_prime, delta = float(params["eps_prime"]), float(params["delta"])
    hyper = dict(lam=lam, epochs=epochs, batch_size=batch, lr_theta=float(params["fermi_lr_theta"]),
                 lr_w=float(params["fermi_lr_w"]))
    if path == "strict":
        c = configure("strict-all", n=n, epsilon=eps_prime, delta=delta,
                      clip_norm=float(params["strict_clip_norm"]), **hyper)
        nm, q = c.config.noise_multiplier, c.sampling_probability
        extra = {"noise_multiplier": nm, "eps_total": dp_sgd_epsilon(nm, q, c.steps, delta),
                 "eps_dpsgd_rdp": dp_sgd_epsilon(nm, q, c.steps, delta, "rdp")}
    else:
        group = _GROUP_INDEX[str(params["fermi_code_group"])]
        if path == "other-group":
            group = 1 - group
        c = configure("reference", n=n, epsilon=eps_prime, delta=delta, rho=group_floor(ds.s[tr]), noise_scope="all",
                      warn=False, code_group=group, clip_norm=float(params["fermi_lipschitz"]),
                      w_radius=float(params["fermi_w_radius"]), **hyper)
        extra = {"sigma_theta": c.config.sigma_theta, "sigma_w": c.config.sigma_w}
    res = train_batch(X[tr], ds.y[tr], ds.s[tr], [c.config], rng=rng)[0]
    pred = res.model.predict(X[sp.test])
    return TrialOutput(records=[{"method": name, "accuracy": accuracy(pred, ds.y[sp.test]),
                                 "sp_gap": sp_gap(pred, ds.s[sp.test]), "eps_label": eps_label, **extra}])
