"""Study module for thesis Tables 5.1–5.4: OPT (Theorem 14 LDP pre-processing) against FairProjection.

One trial = one repetition (the thesis' "trial", seeds 0..9) of one (dataset, fairness metric):

1. 70/30 split exactly as the reference code, ``train_test_split(test_size=0.3,
   random_state=base_seed + repetition)`` on the processed rows (same row order as the authors'
   loader, so the split indices are theirs);
2. **Non-Fair**: ``GradientBoostingClassifier(random_state=42)`` (defaults) on the training split, the
   sensitive attribute included as a feature, threshold 0.5;
3. **OPT** at each ε: Theorem 14's binary mechanism (minority = the smaller group of the training
   split; kept w.p. 1 − e^{−ε}/2, majority reported uniformly) applied to the training attribute
   (the feature column and nothing else), the same GBM refitted, evaluated on the unperturbed test
   set; no projection afterwards (spec §10 L8);
4. **FairProjection** (KL and CE) of the Non-Fair model onto the SP or MEO constraints with every
   tolerance α of the grid: dual ADMM on the training split (ρ = 2, ≤ 500 iterations,
   reg = 1/√n, fudge 1e-4, G jittered with N(0, (1e-5)²)), group membership from the true s (as the
   reference code passes ``s``), prediction on the test split with the test s, threshold 0.5;
5. **Matching** (the thesis leaves it unspecified): within the trial, the FP test curve
   (α ↦ (unfairness, accuracy)) is scanned from the loosest α down; on the first segment
   [α_j, α_{j+1}] whose unfairness values bracket OPT's test unfairness at ε, accuracy and α are
   linearly interpolated at OPT's unfairness (a randomized mixture of the two projected classifiers
   realizes this point when both gaps have the same sign). If no segment brackets it, the closest
   curve end is reported with ``matched = 0``.

The base model and the OPT fits depend only on (dataset, repetition), never on the fairness metric,
so they are computed once per process (``functools.lru_cache``) and shared by the SP and MEO tables;
their randomness is a SeedSequence of (base seed, dataset, repetition, ε), not of the experiment
id, so Tables 5.1/5.2 (and 5.3/5.4) show identical OPT and Non-Fair rows, as in the thesis.

Runtimes (``seconds_fit``): OPT = perturbation + GBM fit + prediction; Non-Fair = GBM fit +
prediction; FairProjection = the base GBM fit + one projection (G, ADMM, prediction) at a known α,
the mean over the grid: the cost of one FP operating point, a lower bound on the cost of finding the
matched point (which needs the sweep, reported in the ``fp_curve`` table).

Spec: ../shared/specs/seed-003-thesis.md §6.4, §8, §10 L8; thesis §5.7.4.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from typing import Any

import numpy as np

from repro.datasets import registry
from repro.datasets.tabular import TabularDataset
from repro.engine.study import Study
from repro.engine.trial import StreamSeed, TrialContext, TrialOutput
from repro.errors import InvalidParameterError
from repro.fairness import fair_projection as fp
from repro.fairness.metrics import accuracy, meo_gap, sp_gap
from repro.privacy.guarantee import NON_PRIVATE, Guarantee
from repro.privacy.ldp_mechanisms import optimal_binary_matrix, perturb
from repro.studies.thesis.ldp_figures import mechanism_guarantee

__all__ = ["STUDY", "match_on_curve", "run_trial"]

#: FairProjection and the base model see the true attribute; their ``epsilon`` is the OPT ε they are matched to
MATCHED_ONLY = "not private: the true attribute is used; `epsilon` names the OPT ε this row is matched to"

DEFAULT_TOLERANCES = (0.0, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0)
DIV_NAMES = {"kl": "FairProjection-KL", "ce": "FairProjection-CE"}
METRIC_NAME = {"sp": "sp_gap", "meo": "meo"}
_GBM_SEED = 42


def _unfairness(kind: str, pred: np.ndarray, y: np.ndarray, s: np.ndarray) -> float:
    return sp_gap(pred, s) if kind == "sp" else meo_gap(pred, s, y)


def _gbm() -> Any:
    from sklearn.ensemble import GradientBoostingClassifier

    return GradientBoostingClassifier(random_state=_GBM_SEED)


def _data(dataset: str, subsample: int, stream: StreamSeed) -> TabularDataset:
    """Any tabular entry of the registry (the experiment's ``[domains]`` says which: ``compas``,
    ``adult-race``), its clean data, and the smoke profile's subsample of rows from ``stream``. The model sees
    the sensitive attribute as a feature (spec seed-003 §6.4: the reference's ``use_protected=True``): a dataset whose
    features do not hold it (no ``s_column``) gets it as one more column."""
    data = registry.get_dataset(dataset).require("tabular", "the thesis Part II tables").load("clean")
    if data.s_column is None:
        data = dataclasses.replace(data, X=np.column_stack([data.X, data.s]).astype(float),
                                   feature_names=(*data.feature_names, "sensitive"), s_column=data.X.shape[1])
    if subsample and subsample < data.n:
        idx = np.sort(stream.rng().permutation(data.n)[:subsample])
        return dataclasses.replace(data, X=data.X[idx], y=data.y[idx], s=data.s[idx])
    return data


@functools.lru_cache(maxsize=8)
def _shared_fits(dataset: str, subsample: int, repetition: int, base_seed: int,
                 epsilons: tuple[float, ...], test_size: float, streams: tuple[StreamSeed, ...]) -> dict[str, Any]:
    """Base GBM (Non-Fair) and OPT fits of one repetition; independent of the fairness metric.

    ``streams``: the subsample's, then each ε's OPT perturbation's (:func:`_streams`), from the scope
    ``tables`` the experiment files declare (shared by the SP and MEO tables of a dataset).

    The split is the reference code's ``train_test_split(random_state=seed)`` with the thesis's seeds
    0..9 (base seed + repetition): an integer the authors' code fixes, not a generator, kept so the
    split indices are theirs."""
    from sklearn.model_selection import train_test_split

    data = _data(dataset, subsample, streams[0])
    split_seed = int(base_seed) + int(repetition)
    tr, te = train_test_split(np.arange(data.n), test_size=test_size, random_state=split_seed)
    Xtr, ytr, str_ = data.X[tr], data.y[tr], data.s[tr]
    Xte, yte, ste = data.X[te], data.y[te], data.s[te]
    t0 = time.perf_counter()
    base = _gbm().fit(Xtr, ytr)
    p_te = base.predict_proba(Xte)
    pred_base = (p_te[:, 1] > 0.5).astype(np.int64)
    base_seconds = time.perf_counter() - t0
    p_tr = base.predict_proba(Xtr)
    share1 = float(str_.mean())
    minority = 1 if share1 < 0.5 else 0
    opt = {}
    for eps, stream in zip(epsilons, streams[1:], strict=True):
        rng = stream.rng()
        t0 = time.perf_counter()
        z = perturb(str_, optimal_binary_matrix(float(eps), minority), rng=rng)
        Xz = np.array(Xtr, copy=True)
        Xz[:, data.s_column] = z
        pred = (_gbm().fit(Xz, ytr).predict_proba(Xte)[:, 1] > 0.5).astype(np.int64)
        opt[float(eps)] = {"pred": pred, "seconds": time.perf_counter() - t0,
                           "flip_rate": float(np.mean(z != str_))}
    return {"ytr": ytr, "str": str_, "yte": yte, "ste": ste, "p_tr": p_tr, "p_te": p_te,
            "pred_base": pred_base, "base_seconds": base_seconds, "opt": opt, "minority": minority,
            "minority_share": min(share1, 1.0 - share1),
            "n_train": int(len(tr)), "n_test": int(len(te)), "split_seed": split_seed}


def _streams(ctx: TrialContext, dataset: str, subsample: int, epsilons: tuple[float, ...]) -> tuple[StreamSeed, ...]:
    """The streams of :func:`_shared_fits`: the subsample's, then each ε's OPT perturbation's (the split
    seed of repetition r is base seed + r, as the reference code's)."""
    split_seed = int(ctx.base_seed) + int(ctx.repetition)
    return (ctx.seed(dataset, "subsample", subsample, scope="tables"),
            *(ctx.seed(dataset, subsample, split_seed, "opt", float(eps), scope="tables") for eps in epsilons))


def match_on_curve(alphas: np.ndarray, unfair: np.ndarray, acc: np.ndarray, target: float
                   ) -> tuple[float, float, float, bool]:
    """Interpolate a tolerance curve at unfairness ``target``: (accuracy, unfairness, α, matched).

    The curve is sorted by α and scanned from the loosest α down; the first segment whose two
    unfairness values bracket ``target`` is linearly interpolated. Without a bracketing segment
    the curve point closest in unfairness is returned with ``matched = False``.
    """
    order = np.argsort(alphas)
    a, u, c = (np.asarray(v, dtype=float)[order] for v in (alphas, unfair, acc))
    for j in range(len(a) - 1, 0, -1):
        lo, hi = min(u[j - 1], u[j]), max(u[j - 1], u[j])
        if lo <= target <= hi:
            t = 0.0 if u[j - 1] == u[j] else (target - u[j]) / (u[j - 1] - u[j])
            return (float(c[j] + t * (c[j - 1] - c[j])), float(target),
                    float(a[j] + t * (a[j - 1] - a[j])), True)
    j = int(np.argmin(np.abs(u - target)))
    return float(c[j]), float(u[j]), float(a[j]), False


def _label(guarantee: Guarantee, caveat: str | None = None) -> dict[str, str]:
    """A record's ``eps_label``/``eps_caveat`` from the guarantee behind its ε (``caveat`` overrides)."""
    return {"eps_label": guarantee.label.value, "eps_caveat": guarantee.caveat if caveat is None else caveat}


def run_trial(params: dict[str, Any], ctx: TrialContext) -> TrialOutput:
    """One repetition: Non-Fair, OPT at each ε, the FP curves (KL, CE) and the matched FP rows.

    Parameters
    ----------
    params
        ``dataset`` (a tabular registry entry: "compas", "adult-race"), ``fairness`` ("sp" | "meo"), ``epsilons``, ``tolerances``,
        ``divergences`` (subset of ["kl", "ce"]), ``test_size`` (0.3), ``subsample`` (0 = all rows),
        ``admm_max_iter`` (500), ``admm_tol`` (early stop once residuals < tol; 0 = never),
        ``admm_reg`` ("reference" = 1/√n, or a number).
    ctx
        The repetition fixes the split (the reference code's ``random_state = base_seed + repetition``,
        see :func:`_shared_fits`); ``ctx.rng()`` jitters G.

    Spec: seed-003 §6.4, §8.
    """
    dataset = str(params["dataset"])
    kind = str(params["fairness"])
    if kind not in METRIC_NAME:
        raise InvalidParameterError(f"`fairness` must be 'sp' or 'meo'; got {kind!r}")
    metric = METRIC_NAME[kind]
    epsilons = tuple(float(e) for e in params["epsilons"])
    tolerances = np.array(sorted(float(t) for t in params["tolerances"]))
    divergences = [str(d) for d in params["divergences"]]
    reg_param = params["admm_reg"]
    reg = None if reg_param == "reference" else float(reg_param)
    subsample = int(params["subsample"])
    shared = _shared_fits(dataset, subsample, int(ctx.repetition), int(ctx.base_seed), epsilons,
                          float(params["test_size"]), _streams(ctx, dataset, subsample, epsilons))
    yte, ste = shared["yte"], shared["ste"]
    records: list[dict[str, Any]] = []
    base_unfair = _unfairness(kind, shared["pred_base"], yte, ste)
    records.append({"method": "Non-Fair", "accuracy": accuracy(shared["pred_base"], yte), metric: base_unfair,
                    "seconds_fit": shared["base_seconds"], **_label(NON_PRIVATE, "")})
    opt_unfair = {}
    for eps in epsilons:
        o = shared["opt"][eps]
        opt_unfair[eps] = _unfairness(kind, o["pred"], yte, ste)
        records.append({"method": "OPT", "epsilon": eps, "accuracy": accuracy(o["pred"], yte),
                        metric: opt_unfair[eps], "seconds_fit": o["seconds"],
                        **_label(mechanism_guarantee("OPT", eps, 2))})

    # FairProjection of the shared base model.
    p_tr, p_te = fp.smooth(shared["p_tr"]), fp.smooth(shared["p_te"])
    p_ys = fp.group_marginals(shared["ytr"], shared["str"])
    oh_tr, oh_te = fp.one_hot(shared["str"]), fp.one_hot(ste)
    rng = ctx.rng()
    curve: list[dict[str, Any]] = []
    for div in divergences:
        for alpha in tolerances:
            t0 = time.perf_counter()
            G = fp.build_constraints(kind, alpha, p_tr, oh_tr, p_ys, rng=rng)
            res = fp.admm(G, p_tr, divergence=div, max_iter=int(params["admm_max_iter"]), reg=reg,
                          tol=float(params["admm_tol"]))
            G_te = fp.build_constraints(kind, alpha, p_te, oh_te, p_ys, rng=rng)
            h = fp.predict_projected(p_te, G_te, res.lam, div)
            pred = (h[:, 1] > 0.5).astype(np.int64)
            seconds = time.perf_counter() - t0
            h_tr = fp.predict_projected(p_tr, G, res.lam, div)
            curve.append({"divergence": div, "method": DIV_NAMES[div], "alpha": float(alpha),
                          "accuracy": accuracy(pred, yte), "unfairness": _unfairness(kind, pred, yte, ste),
                          "train_violation": fp.constraint_violation(G, h_tr), "admm_iterations": res.iterations,
                          "primal_residual": res.primal_residual, "seconds_projection": seconds})
    for div in divergences:
        rows = [r for r in curve if r["divergence"] == div]
        a = np.array([r["alpha"] for r in rows])
        u = np.array([r["unfairness"] for r in rows])
        c = np.array([r["accuracy"] for r in rows])
        proj_seconds = float(np.mean([r["seconds_projection"] for r in rows]))
        for eps in epsilons:
            acc_m, unf_m, alpha_m, ok = match_on_curve(a, u, c, opt_unfair[eps])
            records.append({"method": DIV_NAMES[div], "epsilon": eps, "accuracy": acc_m, metric: unf_m,
                            "alpha_matched": alpha_m, "matched": float(ok),
                            "seconds_fit": shared["base_seconds"] + proj_seconds, **_label(NON_PRIVATE, MATCHED_ONLY)})
    runtime = [{"method": "OPT", "epsilon": eps, "seconds": shared["opt"][eps]["seconds"],
                "flip_rate": shared["opt"][eps]["flip_rate"]} for eps in epsilons]
    runtime.append({"method": "Non-Fair (base GBM)", "seconds": shared["base_seconds"]})
    for div in divergences:
        rows = [r for r in curve if r["divergence"] == div]
        runtime.append({"method": f"{DIV_NAMES[div]} sweep ({len(rows)} tolerances, excl. base fit)",
                        "seconds": float(sum(r["seconds_projection"] for r in rows))})
    info = [{"n_train": shared["n_train"], "n_test": shared["n_test"], "minority_group": shared["minority"],
             "minority_share": shared["minority_share"], "split_random_state": shared["split_seed"]}]
    return TrialOutput(records=records, tables={"fp_curve": curve, "runtime": runtime, "split": info})


#: index: record keys that identify a row besides the grid keys; values: the label and caveat of its ε
#: (issue 21 audit; docs/privacy.md); scopes: the subsample and OPT streams shared by the SP and MEO tables
STUDY = Study(run_trial=run_trial, index=("epsilon",), values=("eps_label", "eps_caveat"), version="1",
              scopes=("tables",))
