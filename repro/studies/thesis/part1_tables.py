"""Study module for ``experiments/thesis-table-3.1.toml`` … ``thesis-table-3.4.toml`` (thesis Part I).

One trial = one method at one cell and repetition:

* ``Algorithm 2``: DP-SGD logistic regression on [x, A] (numpy, Opacus semantics) trained on 2/3 of
  the 75 % training part, then Algorithm 2 (Laplace-noised group rates on the other 1/3, the flip
  rule applied to the test set). Also returns the record ``DP-SGD (before post-processing)``.
* ``DP-FERMI`` (the thesis's code path, ``reference``), ``DP-FERMI (other group order)`` (the same
  code with the other group's term surviving the 1×1 trace), ``DP-FERMI (strict)`` (paper math,
  per-sample clipping, noise calibrated by the accountant): logistic regression on x only, trained
  on the whole 75 % part, at the cell's λ.

Data modes (grid axis ``data``, issue 13): ``authors`` (default) = the authors' processed file rebuilt
from the raw data (:mod:`repro.datasets.authors_files`; on Adult: ``adult.data``'s complete rows written
twice) with their fixed 75/25 split ``df.sample(frac=0.75, random_state=100)``; ``clean`` = our
deduplicated canonical data with a 75/25 split drawn from the base seed. Both then split the training
part 2/3–1/3 for Algorithm 2 (on Adult's authors' file n_fit = int(2/3 · 45,243) = 30,162: the thesis's
accountant inputs q = 1024/30,162 ≈ 0.034, T = 30 · 50 = 1,500, spec P4).

Variants: ``calibrated`` (default: the DP-SGD noise multiplier is recalibrated with the PLD
accountant for the actual (q, T) to reach ε′ − ε₀ − ε₁) and ``thesis-sigma`` (the thesis's σ values
verbatim; the accountant's ε for them is reported).

Spec: seed-003-thesis.md §2.4, §2.7, §3 (Tables 3.1–3.4), §10 P1–P9; seed-004-dpfermi.md §4.3–§4.4.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from repro.datasets.adult import load_adult
from repro.datasets.authors_files import authors_split, load_authors_dataset
from repro.datasets.credit_card import load_credit_card
from repro.datasets.tabular import Split, TabularDataset, split_indices, split_training_part, standardize
from repro.engine.trial import TrialContext, TrialOutput, global_rng
from repro.errors import InvalidParameterError
from repro.fairness.metrics import accuracy, sp_gap
from repro.fairness.private_postprocessing import algorithm2, apply_rule
from repro.learners.dp_fermi import (
    REFERENCE,
    STRICT_ALL_FEATURES,
    train_dp_fermi,
)
from repro.learners.dp_sgd import train_dp_sgd_logistic
from repro.privacy.accounting import (
    ACCOUNTED,
    NOMINAL,
    PUBLIC_STATISTICS,
    calibrate_noise_multiplier,
    dp_sgd_epsilon,
    opacus_sampling,
)
from repro.privacy.dpfermi_noise import group_floor, thesis_all_feature_noise

__all__ = ["VERSION", "METHODS", "EPS_LABEL", "run_trial", "prepare"]

VERSION = "1"
#: non-metric value columns of a record (never part of a row's identity)
VALUES = ("eps_label",)

ALG2 = "Algorithm 2"
BASE = "DP-SGD (before post-processing)"
FERMI = "DP-FERMI"
FERMI_OTHER = "DP-FERMI (other group order)"
FERMI_STRICT = "DP-FERMI (strict)"
METHODS = (ALG2, FERMI, FERMI_OTHER, FERMI_STRICT)
#: Label of each method's ε (issue 14): DP-SGD + Laplace post-processing is accounted (PLD + basic
#: composition); the thesis's DP-FERMI noise formulas are nominal; the strict DP-FERMI row treats P̂_S as public.
EPS_LABEL = {BASE: ACCOUNTED, ALG2: ACCOUNTED, FERMI: NOMINAL, FERMI_OTHER: NOMINAL, FERMI_STRICT: PUBLIC_STATISTICS}
_LOADERS = {"adult": load_adult, "credit-card": load_credit_card}
#: data modes (issue 13): the authors' file and fixed split, or our clean canonical data
DATA_MODES = ("authors", "clean")
_GROUP_INDEX = {"female": 0, "male": 1}


@functools.lru_cache(maxsize=8)
def prepare(dataset: str, base_seed: int, split: str, repetition: int, subsample: int, data: str = "clean"
            ) -> tuple[TabularDataset, Split, np.ndarray]:
    """(dataset, split, standardized X) — cached per worker process.

    ``data="authors"``: the authors' file and their fixed 75/25 split; ``"clean"``: our canonical data
    and a 75/25 split drawn from the base seed. ``split="fixed"``: one split (and one 2/3–1/3 split of
    the training part) for every repetition and both ε′ tables of the dataset (as the thesis code: one
    ``sample(frac=0.75)``); ``"per-repetition"``: a fresh draw per repetition. ``subsample`` > 0 keeps
    that many random rows first (smoke profile). Standardization uses the 75 % training part's statistics.
    """
    if dataset not in _LOADERS:
        raise ValueError(f"unknown dataset {dataset!r}; expected one of {sorted(_LOADERS)}")
    if data not in DATA_MODES:
        raise InvalidParameterError(f"data must be one of {', '.join(DATA_MODES)}; got {data!r}.")
    ds = load_authors_dataset(dataset) if data == "authors" else _LOADERS[dataset]()
    rep = 0 if split == "fixed" else repetition
    # one split per (dataset, subsample, repetition), shared by Tables 3.1 and 3.2 and Theorem 8
    rng = global_rng(base_seed, "thesis-part1", "split", dataset, subsample, rep)
    if data == "authors":
        train, test = authors_split(ds.n)
        if subsample and subsample < ds.n:  # smoke: a random part of each side, the authors' split kept
            k = max(int(round(subsample * train.size / ds.n)), 2)
            train = rng.choice(train, size=k, replace=False)
            test = np.sort(rng.choice(test, size=max(subsample - k, 2), replace=False))
        sp = split_training_part(train, test, rng=rng)
    else:
        if subsample and subsample < ds.n:
            keep = np.sort(rng.choice(ds.n, size=subsample, replace=False))
            ds = TabularDataset(ds.name, ds.X[keep], ds.y[keep], ds.s[keep], ds.feature_names,
                                ds.numeric_columns, ds.group_names, ds.description, ds.source, ds.canonical)
        sp = split_indices(ds.n, rng=rng)
    X = standardize(ds.X, sp.full_train, ds.numeric_columns)
    return ds, sp, X


def _noise_multiplier(params: dict[str, Any], q: float, steps: int) -> float:
    if params["variant"] == "thesis-sigma":
        return float(params["thesis_sigma"]) / float(params["clip_norm"])
    target = float(params["eps_prime"]) - float(params["eps0"]) - float(params["eps1"])
    return calibrate_noise_multiplier(target, float(params["delta"]), q, steps)


def _run_alg2(ds: TabularDataset, sp: Split, X: np.ndarray, params: dict[str, Any],
              rng: np.random.Generator) -> TrialOutput:
    Xa = np.hstack([X, ds.s[:, None].astype(np.float64)])  # input [x, A] (spec §2.7 step 3)
    n_fit = sp.train.size
    q, steps = opacus_sampling(n_fit, int(params["batch_size"]), int(params["epochs"]),
                               rule=str(params["sampling_rule"]))
    nm = _noise_multiplier(params, q, steps)
    res = train_dp_sgd_logistic(Xa[sp.train], ds.y[sp.train], noise_multiplier=nm,
                                clip_norm=float(params["clip_norm"]), lr=float(params["lr"]),
                                batch_size=int(params["batch_size"]), epochs=int(params["epochs"]),
                                sampling_rule=str(params["sampling_rule"]), rng=rng)
    eps0, eps1, delta = float(params["eps0"]), float(params["eps1"]), float(params["delta"])
    h_post = res.model.predict(Xa[sp.post])
    rule, rates = algorithm2(h_post, ds.s[sp.post], eps0, eps1, rng=rng)
    h_test = res.model.predict(Xa[sp.test])
    y_test, s_test = ds.y[sp.test], ds.s[sp.test]
    fair = apply_rule(h_test, s_test, rule, rng=rng)
    eps_sgd = dp_sgd_epsilon(nm, q, steps, delta)
    eps_sgd_rdp = dp_sgd_epsilon(nm, q, steps, delta, "rdp")
    common = {"noise_multiplier": nm, "noise_std": nm * float(params["clip_norm"]), "q": q,
              "steps": float(steps), "eps_dpsgd": eps_sgd, "eps_dpsgd_rdp": eps_sgd_rdp}
    return TrialOutput(records=[
        {"method": BASE, "accuracy": accuracy(h_test, y_test), "sp_gap": sp_gap(h_test, s_test),
         "eps_total": eps_sgd, "eps_label": EPS_LABEL[BASE], **common},
        {"method": ALG2, "accuracy": accuracy(fair, y_test), "sp_gap": sp_gap(fair, s_test),
         "eps_total": eps_sgd + eps0 + eps1, "eps_label": EPS_LABEL[ALG2], **common,
         "alpha_bar": rates.alpha_bar, "beta_bar": rates.beta_bar,
         "alpha_tilde": rates.alpha_tilde, "beta_tilde": rates.beta_tilde},
    ], tables=_provenance(ds, sp))


def _provenance(ds: TabularDataset, sp: Split) -> dict[str, list[dict[str, Any]]]:
    return {"data": [{"dataset": ds.name, "data": "authors" if ds.name.endswith("-authors") else "clean",
                      "source": ds.source, "canonical": ds.canonical, "rows": ds.n,
                      "features": ds.d, "n_fit": int(sp.train.size), "n_post": int(sp.post.size),
                      "n_full_train": int(sp.full_train.size), "n_test": int(sp.test.size)}]}


def _run_fermi(method: str, ds: TabularDataset, sp: Split, X: np.ndarray, params: dict[str, Any],
               rng: np.random.Generator) -> TrialOutput:
    lam = float(params["lambda"])
    tr = sp.full_train
    n = tr.size
    epochs, batch = int(params["epochs"]), int(params["batch_size"])
    eps_prime, delta = float(params["eps_prime"]), float(params["delta"])
    extra: dict[str, float] = {}
    if method == FERMI_STRICT:
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
        if method == FERMI_OTHER:
            group = 1 - group
        cfg = REFERENCE.with_(lam=lam, epochs=epochs, batch_size=batch, sigma_theta=sigma_theta,
                              sigma_w=sigma_w, code_group=group,
                              lr_theta=float(params["fermi_lr_theta"]), lr_w=float(params["fermi_lr_w"]),
                              clip_norm=float(params["fermi_lipschitz"]),
                              w_radius=float(params["fermi_w_radius"]))
        extra = {"sigma_theta": sigma_theta, "sigma_w": sigma_w}
    res = train_dp_fermi(X[tr], ds.y[tr], ds.s[tr], cfg, rng=rng)
    pred = res.model.predict(X[sp.test])
    return TrialOutput(records=[{"method": method, "accuracy": accuracy(pred, ds.y[sp.test]),
                                 "sp_gap": sp_gap(pred, ds.s[sp.test]), "eps_label": EPS_LABEL[method],
                                 **extra}])


def run_trial(params: dict[str, Any], ctx: TrialContext) -> TrialOutput:
    """One method at one cell (see the module docstring). Spec: seed-003 §2.7, §3.3."""
    method = str(params["method"])
    only = str(params["only_method"])
    if only and method != only:  # `--set only_method=...`: run one method's cells only (e.g. a variant)
        return TrialOutput(records=[])
    ds, sp, X = prepare(str(params["dataset"]), ctx.base_seed, str(params["split"]),
                        ctx.repetition, int(params["subsample"]), str(params["data"]))
    if method == ALG2:
        return _run_alg2(ds, sp, X, params, ctx.rng())
    if method in (FERMI, FERMI_OTHER, FERMI_STRICT):
        return _run_fermi(method, ds, sp, X, params, ctx.rng())
    raise ValueError(f"unknown method {method!r}; expected one of {METHODS}")
