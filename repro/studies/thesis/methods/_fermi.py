"""DP-FERMI on the thesis tables' split, shared by the three DP-FERMI method files (not a method itself).

Logistic regression on x only, trained on the whole 75 % part at the cell's λ. ``reference`` / ``other group
order``: the thesis's code path (engine config ``REFERENCE``) with the thesis's all-feature noise formulas;
``strict``: the paper's math with per-sample clipping and noise calibrated by the accountant.
Spec: seed-003 §3.3; seed-004-dpfermi.md §4.3–§4.4.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from repro.datasets.tabular import Split, TabularDataset
from repro.engine.trial import TrialOutput
from repro.fairness.metrics import accuracy, sp_gap
from repro.learners.dp_fermi import REFERENCE, STRICT_ALL_FEATURES, train_dp_fermi
from repro.privacy.accounting import calibrate_noise_multiplier, dp_sgd_epsilon, opacus_sampling
from repro.privacy.dpfermi_noise import group_floor, thesis_all_feature_noise

_GROUP_INDEX = {"female": 0, "male": 1}


def run_fermi(name: str, path: str, eps_label: str, ds: TabularDataset, sp: Split, X: np.ndarray,
              params: dict[str, Any], rng: np.random.Generator) -> TrialOutput:
    """One DP-FERMI record; ``path`` is ``reference``, ``other-group`` or ``strict``."""
    lam = float(params["lambda"])
    tr = sp.full_train
    n = tr.size
    epochs, batch = int(params["epochs"]), int(params["batch_size"])
    eps_prime, delta = float(params["eps_prime"]), float(params["delta"])
    extra: dict[str, float] = {}
    if path == "strict":
        q, steps = opacus_sampling(n, batch, epochs)
        nm = calibrate_noise_multiplier(eps_prime, delta, q, steps)
        cfg = STRICT_ALL_FEATURES.with_(lam=lam, epochs=epochs, batch_size=batch, noise_multiplier=nm,
                                        clip_norm=float(params["strict_clip_norm"]),
                                        lr_theta=float(params["fermi_lr_theta"]), lr_w=float(params["fermi_lr_w"]))
        extra = {"noise_multiplier": nm, "eps_total": dp_sgd_epsilon(nm, q, steps, delta),
                 "eps_dpsgd_rdp": dp_sgd_epsilon(nm, q, steps, delta, "rdp")}
    else:
        steps = epochs * math.ceil(n / batch)
        sigma_theta, sigma_w = thesis_all_feature_noise(
            n, steps, group_floor(ds.s[tr]), eps_prime, delta,
            w_radius=float(params["fermi_w_radius"]), lipschitz=float(params["fermi_lipschitz"]))
        group = _GROUP_INDEX[str(params["fermi_code_group"])]
        if path == "other-group":
            group = 1 - group
        cfg = REFERENCE.with_(lam=lam, epochs=epochs, batch_size=batch, sigma_theta=sigma_theta,
                              sigma_w=sigma_w, code_group=group,
                              lr_theta=float(params["fermi_lr_theta"]), lr_w=float(params["fermi_lr_w"]),
                              clip_norm=float(params["fermi_lipschitz"]),
                              w_radius=float(params["fermi_w_radius"]))
        extra = {"sigma_theta": sigma_theta, "sigma_w": sigma_w}
    res = train_dp_fermi(X[tr], ds.y[tr], ds.s[tr], cfg, rng=rng)
    pred = res.model.predict(X[sp.test])
    return TrialOutput(records=[{"method": name, "accuracy": accuracy(pred, ds.y[sp.test]),
                                 "sp_gap": sp_gap(pred, ds.s[sp.test]), "eps_label": eps_label, **extra}])
