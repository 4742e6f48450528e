"""Study: DP-FERMI's tabular tradeoff figures 2–4 and 6–10 (Lowy, Gupta, Razaviyayn, ICLR 2023).

Spec: seed-004-dpfermi.md §4.3–§4.4 (engine switches), §5 (Theorem 3.3 noise, caveats), §7
(datasets, hyperparameters, metrics (10)/(11), curve construction), §8 (baselines), §9.3 (claims),
Appendix A (released values, in ``experiments/reference_data/dpfermi_released_curves.csv``).

One trial = one (ε, method, repetition). It trains every point of the method's knob grid (λ for
DP-FERMI, γ for Tran et al. 2021a, the bound B for Jagielski et al. 2019; PF-LD has none) and
returns one record per point with the test misclassification error, the figure's violation
(DP (10) or EO (11)) and both violations. DP-FERMI trials also train the non-private λ = 0 model
(``error_nonprivate``) for claim 4.

Data modes (grid axis ``data``, issue 13): ``authors`` (default) = the authors' processed file rebuilt
from the raw data (:mod:`repro.datasets.authors_files`) with their one fixed split
(``df.sample(frac=0.75, random_state=100)``, the same for every repetition); ``clean`` = our loader of
the deduplicated canonical data with a 3:1 split drawn per repetition from ``ctx.rng("split", scope="repetition")``,
shared by all methods and ε of that repetition.

Variants:

``reference`` (default)
    The authors' released behaviour [C0] that made the figures, via the ONE engine
    (:func:`repro.learners.dp_fermi.train_dp_fermi`, config defaults): one-term ``code_1x1`` ERMI,
    minibatch gradient clipped to L, θ noise ×1, W noise ×λ, Frobenius ball of radius D, W₀ ~ N(0,1),
    shuffled epochs, last iterate, noise of Theorem 3.3(a) (sensitive attribute only) with
    δ = 1/n², ρ = (min group count − 1)/n. The surviving trace term is the group that pandas lists
    first in the authors' fixed training frame; we take the group with the higher training
    positive-label rate (male on all four datasets), the only order for which the regularizer lowers
    the violation as the released curves do (ours; spec §4.3). (L, D, η_θ) per ``hyperparameters``:
    ``tuned`` by the declared validation rule of :mod:`repro.studies.dpfermi.tuning` (computed once per
    run and cell, cached), ``fixed`` = L = D = 5 and η_θ = ``lr_theta`` (an ablation); both settings
    and all λ train in one batched pass.
``strict`` (``--variant strict``)
    The paper's ERMI (W ∈ R^{k×2}, W₀ = 0) with noise only on the s-dependent gradient parts (spec
    §4.4 "Strict-DP mode", engine config ``STRICT_SENSITIVE``): each sample's sensitive θ part clipped
    to C_s = 1, θ noise ×λ, W noise from the exact bound of the sensitive W part, Poisson sampling,
    one noise multiplier calibrated with the PLD accountant so that the stated ε holds for the joint
    (θ, W) mechanism w.r.t. the **sensitive attribute** (the guarantee the paper's Theorem 3.3(a)
    claims; P̂_S treated as public). The accounting takes no amplification by subsampling (q = 1):
    a record's unclipped non-sensitive part enters the same noisy sum (issue 14, defect 1). At λ = 0 the model does not see S, so it is noiseless.
``strict-all`` (``--variant strict-all``)
    The same ERMI with per-sample clipping of the joint (θ, W) gradient (C = 1.5) and the accountant-
    calibrated noise on everything: the stated ε holds w.r.t. **all features** (config
    ``STRICT_ALL_FEATURES``; the thesis's "DP-FERMI (strict)" row uses it too).

All λ of a trial and its non-private λ = 0 model are trained together by
:func:`repro.learners.dp_fermi.train_dp_fermi_batch` (same batches and noise draws: common random
numbers across λ, like the authors' per-seed ``torch.manual_seed``).

Baselines (:mod:`repro.learners.baselines`) are the same in all variants; each is (ε, δ)-DP by
its own accountant (documented in its module).
"""

from __future__ import annotations

import functools
import logging
import math
from typing import Any

import numpy as np

from repro.engine.trial import TrialContext, TrialOutput
from repro.errors import InvalidParameterError
from repro.fairness.metrics import eq_odds_gap, sp_gap
from repro.learners.baselines import train_jagielski_2019, train_pf_ld, train_tran_2021a
from repro.learners.dp_fermi import (
    STRICT_ALL_FEATURES,
    STRICT_SENSITIVE,
    DPFermiConfig,
    accounted_sampling_probability,
    train_dp_fermi_batch,
)
from repro.privacy.accounting import (
    NOMINAL,
    PUBLIC_STATISTICS,
    calibrate_noise_multiplier,
    dp_sgd_event,
    opacus_sampling,
)
from repro.privacy.accounting import epsilon as accountant_epsilon
from repro.privacy.dpfermi_noise import accountant_epsilons, group_floor, theorem33_noise

__all__ = ["run_trial", "load_dataset", "epsilon_label"]

#: ε label per (method, DP-FERMI variant) (issue 14, defect 3). Tran 2021a and PF-LD: the fairness penalty
#: couples the samples of a batch (group means, signs), so per-sample clipping does not bound the
#: sensitivity and their ε is the formula's; strict / strict-all and Jagielski treat P̂_S or the cell sizes
#: as public.
_EPS_LABELS = {("dp-fermi", "reference"): NOMINAL, ("dp-fermi", "strict"): PUBLIC_STATISTICS,
               ("dp-fermi", "strict-all"): PUBLIC_STATISTICS, "tran-2021a": NOMINAL, "pf-ld": NOMINAL,
               "jagielski-2019": PUBLIC_STATISTICS}


def epsilon_label(method: str, variant: str = "reference") -> str:
    """The label of the ε this study reports for ``method`` (and DP-FERMI ``variant``): see _EPS_LABELS."""
    key = (method, variant) if method == "dp-fermi" else method
    if key not in _EPS_LABELS:
        raise InvalidParameterError(f"no ε label for method {method!r}, variant {variant!r}; add it to _EPS_LABELS.")
    return _EPS_LABELS[key]

log = logging.getLogger(__name__)

VERSION = "2"
#: record keys that identify a row besides the grid keys (repro.engine.runner.DeclaredOutputs)
INDEX = ("knob", "hyper")
#: non-metric value columns of a record (never part of a row's identity)
VALUES = ("clip_L", "radius_D", "lr_theta", "eps_label")
#: the baselines do not depend on the DP-FERMI variant: `--variant strict` reuses their cached trials
VARIANT_INDEPENDENT_METHODS = ("tran-2021a", "pf-ld", "jagielski-2019")


# ------------------------------------------------------------------------------------------ data

#: the two data modes (issue 13, item 2): the authors' processed files with their fixed split, or the
#: deduplicated canonical data with a split per repetition
DATA_MODES = ("authors", "clean")


@functools.lru_cache(maxsize=8)
def load_dataset(name: str, data: str = "clean"):
    """The :class:`repro.datasets.tabular.TabularDataset` of ``name`` in data mode ``data`` (cached per process).

    ``data="authors"``: the authors' processed file rebuilt from the raw data
    (:mod:`repro.datasets.authors_files`); ``"clean"``: our loader of the canonical data. Spec: seed-004 §7.1.
    """
    if data not in DATA_MODES:
        raise InvalidParameterError(f"data must be one of {', '.join(DATA_MODES)}; got {data!r}.")
    if data == "authors":
        from repro.datasets.authors_files import load_authors_dataset
        return load_authors_dataset(name)
    if name == "adult":
        from repro.datasets.adult import load_adult
        return load_adult()
    if name == "credit-card":
        from repro.datasets.credit_card import load_credit_card
        return load_credit_card()
    if name == "retired-adult":
        from repro.datasets.retired_adult import load_retired_adult
        return load_retired_adult()
    if name == "parkinsons":
        from repro.datasets.parkinsons import load_parkinsons
        return load_parkinsons()
    raise InvalidParameterError(
        f"dataset must be one of adult, credit-card, retired-adult, parkinsons; got {name!r}.")


def _split(ds, params: dict[str, Any], ctx: TrialContext, data: str):
    """The 3:1 split, training-statistics standardization, optional training subsample.

    ``data="authors"``: the authors' fixed split (``df.sample(frac=0.75, random_state=100)``, the same
    for every repetition); ``"clean"``: a random split per repetition.
    """
    from repro.datasets.tabular import standardize, train_test_indices

    rng = ctx.rng("split", ds.name, scope="repetition")
    if data == "authors":
        from repro.datasets.authors_files import authors_split
        train, test = authors_split(ds.n, float(params["train_fraction"]))
    else:
        train, test = train_test_indices(ds.n, float(params["train_fraction"]), rng=rng)
    sub = int(params["subsample"] or 0)
    if 0 < sub < train.size:
        train = np.sort(rng.choice(train, size=sub, replace=False))
        test = np.sort(rng.choice(test, size=min(test.size, max(sub // 3, 200)), replace=False))
    X = standardize(ds.X, train, ds.numeric_columns)
    return (X[train], ds.y[train].astype(np.int64), ds.s[train].astype(np.int64),
            X[test], ds.y[test].astype(np.int64), ds.s[test].astype(np.int64))


def _metrics(prob_pred: np.ndarray, y: np.ndarray, s: np.ndarray, fairness: str) -> dict[str, float]:
    """Error, DP violation (10), EO violation (11) of (possibly expected) 0/1 predictions."""
    p = np.asarray(prob_pred, dtype=float)
    err = float(np.mean(p * (1 - y) + (1 - p) * y))
    dp = sp_gap(p, s)
    eo = eq_odds_gap(p, s, y)
    return {"error": err, "dp_violation": dp, "eo_violation": eo,
            "violation": dp if fairness == "dp" else eo}


def _privileged_group(y: np.ndarray, s: np.ndarray) -> int:
    rates = [y[s == g].mean() for g in range(int(s.max()) + 1)]
    return int(np.argmax(rates))


# ---------------------------------------------------------------------------------- the methods

def _tuned(params, ctx, data: str, base: DPFermiConfig):
    """The (L, D, η_θ) chosen by :func:`repro.studies.dpfermi.tuning.tune_reference` for this cell, computed
    once per run (and cached) for all repetitions: on the authors' fixed training part, or (clean data)
    on repetition 0's training part. Everything the search depends on (its rows, n, T, ρ, the code's
    group) is taken from that one training part, never from the calling repetition, so every
    repetition gets the same choice."""
    from repro.studies.dpfermi.tuning import TuningGrid, tune_reference

    grid = TuningGrid.from_params(params)
    eps = float(params["epsilon"])
    labels = [params["dataset"], data, params["fairness"], eps, int(params["subsample"] or 0),
              float(params["train_fraction"])]
    rep0 = ctx.for_repetition(0)
    if data == "clean":  # the split depends on the experiment and the repetition (rep 0 here)
        labels.append(ctx.experiment_id)
    ds = load_dataset(params["dataset"], data)
    Xtr, ytr, str_ = _split(ds, params, rep0, data)[:3]
    n = Xtr.shape[0]
    steps = base.epochs * math.ceil(n / base.batch_size)
    rho, delta = group_floor(str_), 1.0 / n**2
    base = base.with_(code_group=_privileged_group(ytr, str_))

    def compute():
        return tune_reference(Xtr, ytr, str_, base=base, epsilon=eps, n_final=n, steps_final=steps,
                              rho_final=rho, delta=delta, grid=grid, seed_labels=labels, base_seed=ctx.base_seed)

    key = {"labels": labels, "grid": [grid.clips, grid.radii, grid.lr_thetas, grid.seeds, grid.validation_fraction],
           "base": repr(base), "n": n, "steps": steps, "rho": rho, "delta": delta, "base_seed": ctx.base_seed}
    return ctx.shared_value("dpfermi-tuning", key, __name__, compute, validate=_is_tuning_choice)


def _is_tuning_choice(value: Any) -> bool:
    """Structure of a cached tuning value: a TuningChoice whose (L, D, η_θ) are numbers."""
    from repro.studies.dpfermi.tuning import TuningChoice

    return isinstance(value, TuningChoice) and all(
        isinstance(v, (int, float)) for v in (value.clip, value.radius, value.lr_theta, value.validation_error))


def _dp_fermi(params, ctx, data, Xtr, ytr, str_, Xte, yte, ste):
    eps = float(params["epsilon"])
    fairness = params["fairness"]
    variant = params["variant"]
    n = Xtr.shape[0]
    B = int(params["batch_size"])
    epochs = int(params["epochs"])
    steps = epochs * math.ceil(n / B)
    delta = 1.0 / n**2
    rho = group_floor(str_)
    base = dict(lr_theta=float(params["lr_theta"]), lr_w=float(params["lr_w"]),
                batch_size=B, epochs=epochs, fairness=fairness)
    privacy: dict[str, Any] = {"method": "dp-fermi", "epsilon": eps, "delta": delta, "n_train": n,
                               "steps": steps, "rho": rho, "variant": variant}
    tables: dict[str, list[dict[str, Any]]] = {}
    if variant == "reference":
        lambdas = [float(v) for v in params["lambdas"]]
        acc = accountant_epsilons(n, steps, B, eps, delta)
        code_group = _privileged_group(ytr, str_)
        ref = DPFermiConfig(**base, code_group=code_group)
        # (L, D, η_θ) per hyperparameter setting: `tuned` by the declared validation rule, `fixed` = the
        # project's earlier reading L = D = 5, η_θ = params lr_theta (issue 13, item 3)
        settings: dict[str, tuple[float, float, float]] = {}
        for hyper in params["hyperparameters"]:
            if hyper == "fixed":
                settings[hyper] = (float(params["fixed_clip"]), float(params["fixed_radius"]),
                                   base["lr_theta"])
            elif hyper == "tuned":
                choice = _tuned(params, ctx, data, ref)
                settings[hyper] = (choice.clip, choice.radius, choice.lr_theta)
                if ctx.repetition == 0:
                    tables["tuning"] = [{"epsilon": eps, "data": data, **r} for r in choice.rows]
            else:
                raise InvalidParameterError(f"hyperparameters must list 'tuned' and/or 'fixed'; got {hyper!r}.")
        cfgs, tags, privacy_rows = [], [], []
        for hyper, (clip, radius, lr) in settings.items():
            noise = theorem33_noise(n, steps, B, rho, eps, delta, scope="sensitive", lipschitz=clip, w_radius=radius)
            cfg = ref.with_(clip_norm=clip, w_radius=radius, lr_theta=lr, sigma_theta=noise.sigma_theta,
                            sigma_w=noise.sigma_w)
            cfgs += [cfg.with_(lam=lam) for lam in lambdas]
            tags += [(hyper, clip, radius, lr, lam) for lam in lambdas]
            privacy_rows.append({**privacy, "hyper": hyper, "clip_L": clip, "radius_D": radius, "lr_theta": lr,
                                 "sigma_theta": noise.sigma_theta, "sigma_w": noise.sigma_w,
                                 "noise_multiplier": acc["z"], "eps_block_rdp": acc["block"],
                                 "eps_joint_rdp": acc["joint"], "conditions_ok": noise.conditions.ok,
                                 "code_group": code_group,
                                 "guarantee": "nominal: per block, sensitive attribute only, no per-sample clipping"})
        first = next(iter(settings.values()))
        nonpriv = ref.with_(clip_norm=first[0], w_radius=first[1], lr_theta=first[2], sigma_theta=0.0,
                            sigma_w=0.0, lam=0.0)
        results = train_dp_fermi_batch(Xtr, ytr, str_, [*cfgs, nonpriv], rng=ctx.rng())
        err0 = _metrics(results[-1].model.predict(Xte), yte, ste, fairness)["error"]
        records = [{"method": "dp-fermi", "knob": lam, "hyper": hyper, "clip_L": clip, "radius_D": radius,
                    "lr_theta": lr, "error_nonprivate": err0,
                    **_metrics(res.model.predict(Xte), yte, ste, fairness)}
                   for (hyper, clip, radius, lr, lam), res in zip(tags, results[:-1], strict=True)]
        return records, privacy_rows, tables
    elif variant in ("strict", "strict-all"):
        lambdas = [float(v) for v in params["strict_lambdas"]]
        q, T = opacus_sampling(n, B, epochs)
        engine = STRICT_SENSITIVE if variant == "strict" else STRICT_ALL_FEATURES
        # strict: no amplification by subsampling (unclipped non-sensitive part, issue 14 defect 1)
        q_acc = accounted_sampling_probability(engine, q)
        z = 0.0 if math.isinf(eps) else calibrate_noise_multiplier(eps, delta, q_acc, T)
        cfg = engine.with_(**base, noise_multiplier=z)
        privacy.update(noise_multiplier=z, clip_norm=cfg.clip_norm, steps=T, sampling_probability=q,
                       accounted_sampling_probability=q_acc,
                       eps_joint_pld=math.inf if z == 0 else accountant_epsilon(dp_sgd_event(z, q_acc, T), delta),
                       guarantee=("joint (theta, W), sensitive attribute only, PLD accountant without "
                                  "amplification by subsampling; P-hat_S public"
                                  if variant == "strict" else
                                  "joint (theta, W), all features, PLD accountant; P-hat_S public"))
        nonpriv = cfg.with_(noise_multiplier=0.0, lam=0.0)
    else:
        raise InvalidParameterError(
            f"variant must be 'reference', 'strict' or 'strict-all'; got {variant!r}.")
    # all λ and the non-private λ = 0 model in one batched run (shared batches and noise draws)
    results = train_dp_fermi_batch(Xtr, ytr, str_, [cfg.with_(lam=lam) for lam in lambdas] + [nonpriv],
                                   rng=ctx.rng())
    err0 = _metrics(results[-1].model.predict(Xte), yte, ste, fairness)["error"]
    records = [{"method": "dp-fermi", "knob": lam, "error_nonprivate": err0,
                **_metrics(res.model.predict(Xte), yte, ste, fairness)}
               for lam, res in zip(lambdas, results[:-1], strict=True)]
    return records, [privacy], tables


def _baseline(method, params, ctx, Xtr, ytr, str_, Xte, yte, ste):
    eps = float(params["epsilon"])
    fairness = params["fairness"]
    n = Xtr.shape[0]
    delta = 1.0 / n**2
    common = dict(epsilon=eps, delta=delta, batch_size=int(params["batch_size"]),
                  lr=float(params["baseline_lr"]), clip_norm=float(params["baseline_clip"]),
                  rng=ctx.rng())
    epochs = int(params["baseline_epochs"])
    privacy: dict[str, Any] = {"method": method, "epsilon": eps, "delta": delta, "n_train": n}
    records = []
    if method == "tran-2021a":
        res = train_tran_2021a(Xtr, ytr, str_, gammas=[float(g) for g in params["tran_gammas"]],
                               epochs=epochs, fairness="dp", **common)
        for g, model in zip(res.gammas, res.models, strict=True):
            records.append({"method": method, "knob": g, **_metrics(model.predict(Xte), yte, ste, fairness)})
        privacy.update(noise_multiplier=res.noise_multiplier, steps=res.steps)
    elif method == "pf-ld":
        res = train_pf_ld(Xtr, ytr, str_, fairness=fairness, epochs=epochs,
                          dual_lr=float(params["pf_ld_dual_lr"]), **common)
        records.append({"method": method, **_metrics(res.model.predict(Xte), yte, ste, fairness)})
        privacy.update(noise_multiplier=res.noise_multiplier, dual_noise_multiplier=res.dual_noise_multiplier,
                       steps=res.steps)
    elif method == "jagielski-2019":
        res = train_jagielski_2019(Xtr, ytr, str_, bounds=[float(b) for b in params["jagielski_bounds"]],
                                   rounds=int(params["jagielski_rounds"]),
                                   learner_epochs=int(params["jagielski_learner_epochs"]), **common)
        P = res.predict_proba(Xte)
        for j, b in enumerate(res.bounds):
            records.append({"method": method, "knob": b, **_metrics(P[:, j], yte, ste, fairness)})
        privacy.update(noise_multiplier=res.noise_multiplier, steps=res.steps,
                       laplace_epsilon_per_round=res.laplace_epsilon_per_round)
    else:
        raise InvalidParameterError(
            f"method must be dp-fermi, tran-2021a, pf-ld or jagielski-2019; got {method!r}.")
    privacy["guarantee"] = ("(epsilon, delta)-DP w.r.t. all features if the group cell sizes are public "
                            "(see the baseline's module)" if method == "jagielski-2019" else
                            "nominal: the fairness penalty couples the samples of a batch, so per-sample "
                            "clipping does not bound the sensitivity")
    return records, [privacy], {}


def run_trial(params: dict[str, Any], ctx: TrialContext) -> TrialOutput:
    """Train every knob point of one (dataset, ε, method) and evaluate on the test split.

    Spec: seed-004 §7.2–§7.4.
    """
    fairness = params["fairness"]
    if fairness not in ("dp", "eo"):
        raise InvalidParameterError(f"fairness must be 'dp' or 'eo'; got {fairness!r}.")
    data = str(params["data"])
    ds = load_dataset(params["dataset"], data)
    parts = _split(ds, params, ctx, data)
    method = params["method"]
    if method == "dp-fermi":
        records, privacy, tables = _dp_fermi(params, ctx, data, *parts)
    else:
        records, privacy, tables = _baseline(method, params, ctx, *parts)
    label = epsilon_label(method, str(params["variant"]))
    for row in privacy:
        row.update(eps_label=label, data=data,
                   data_source=ds.source + ("" if ds.canonical else " (DERIVED or INFERRED, not canonical)"))
    for r in records:
        r["eps_label"] = label
    return TrialOutput(records=records, tables={"privacy": privacy, **tables})
