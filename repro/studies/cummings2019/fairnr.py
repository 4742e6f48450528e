"""Study module for ``experiments/compat-fairnr.toml``: a scaled-down Private-FairNR (Algorithm 3).

Each trial runs Algorithm 3 for equal opportunity (FN rates via the label flip, DEC-19) on one dataset
(``synthetic``: the discrete logistic population of spec §6, n records drawn from it; ``adult``: UCI
Adult with sex as the group, via :func:`repro.datasets.adult.load_adult`, coarsened to a few
ordinal features) with a finite hypothesis class enumerated exactly (CSC by enumeration, DEC-18), in
one mode: ``nonprivate`` (FTPL without noise = follow-the-leader), ``paper`` [P] (the paper's ε′ and
noiseless auditor) or ``corrected`` [X] (our sensitivity, private auditor and exact composition).

It reports the error and the EO gap Γ of the output mixture (on the population for synthetic data,
on a held-out third for Adult), their values over rounds, the fair-ERM optimum, our privacy
accounting, and the paper's own formulas at the same n: its T, m, the bound η at our (T, m) and its
condition Eq. (2) — all labelled.

Spec: seed-000-002-compat.md §4–§5, §6 (R-F2, R-T5, R-T6), §7, §8 (DEC-10 … DEC-23).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from repro.engine.study import Study
from repro.engine.trial import TrialContext, TrialOutput
from repro.errors import InvalidParameterError
from repro.learners import fairnr_unit
from repro.theory import expmech_learner as em
from repro.theory import fairnr as fn
from repro.theory import sample_complexity as sc

__all__ = ["STUDY", "METHODS", "adult_types", "synthetic_types", "run_trial"]


#: Method label per mode: who the calibration belongs to.
METHODS = {"nonprivate": "non-private (ε = ∞)", "paper": "paper-calibrated [P]", "corrected": "corrected [X]"}

#: Adult coarsening (ours): feature, cut points (value ≥ cut → next level). Sex is the group, not a feature.
ADULT_CUTS: dict[str, tuple[float, ...]] = {
    "education-num": tuple(float(v) for v in range(2, 17)),  # 16 levels
    "age": (25.0, 30.0, 35.0, 40.0, 45.0, 50.0, 60.0),  # 8 levels
    "hours-per-week": (30.0, 40.0, 41.0, 50.0, 60.0),  # 6 levels
    "capital-gain": (1.0, 5000.0),  # 3 levels
    "marital-status=Married-civ-spouse": (0.5,),  # 2 levels
}


@functools.lru_cache(maxsize=2)
def adult_types() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, tuple[str, ...]]:
    """Adult (45,222 rows, A = sex) coarsened: per-record type id, the types' (y, g), and the class.

    Returns (type_of_record, y_of_type, g_of_type, pred[h, type], hypothesis names). The class is the
    union over the coarsened features of group-specific thresholds 1[x_j ≥ t_a] (duplicates of the
    prediction vector removed, first kept). Spec: §5.7 ("group-threshold" finite H), DEC-18.
    """
    from repro.datasets.adult import load_adult

    ds = load_adult()
    names = list(ds.feature_names)
    levels = []
    for feat, cuts in ADULT_CUTS.items():
        col = ds.X[:, names.index(feat)]
        levels.append(np.searchsorted(np.asarray(cuts), col, side="right"))
    lv = np.stack(levels, axis=1).astype(np.int64)
    key = np.concatenate([lv, ds.s[:, None].astype(np.int64), ds.y[:, None].astype(np.int64)], axis=1)
    uniq, type_of = np.unique(key, axis=0, return_inverse=True)
    y_t, g_t = uniq[:, -1], uniq[:, -2]
    rows, hnames = [], []
    for j, (feat, cuts) in enumerate(ADULT_CUTS.items()):
        k = len(cuts) + 1
        for t0 in range(k + 1):
            for t1 in range(k + 1):
                thr = np.where(g_t == 1, t1, t0)
                rows.append((uniq[:, j] >= thr).astype(np.int8))
                hnames.append(f"{feat}>=({t0},{t1})")
    pred = np.stack(rows)
    _, first = np.unique(pred, axis=0, return_index=True)
    keep = np.sort(first)
    return type_of.ravel(), y_t, g_t, pred[keep].astype(float), tuple(hnames[i] for i in keep)


@functools.lru_cache(maxsize=4)
def synthetic_types(k: int, p_a: float, w: float, b: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Synthetic population over types (x, a, y) and the group-threshold class (spec §6).

    Returns (prob_of_type, y_of_type, g_of_type, pred[h, type]).
    """
    prob = em.logistic_population(k, p_a=p_a, w=w, b=b)
    hyp, _ = em.threshold_class(k)
    idx = np.array(list(np.ndindex(prob.shape)))
    pred = hyp[:, idx[:, 0], idx[:, 1]]
    return prob.ravel(), idx[:, 2], idx[:, 1], pred


def _mixture_metrics(weights: np.ndarray, pred: np.ndarray, mass: np.ndarray, y: np.ndarray, g: np.ndarray
                     ) -> tuple[float, float]:
    """Error and EO gap Γ = |TPR₀ − TPR₁| of the mixture Σ w_h h (original labels) under type masses."""
    p = weights @ pred
    err = float(np.sum(mass * np.where(y == 1, 1 - p, p)) / mass.sum())
    tpr = [float(np.sum(mass * p * ((y == 1) & (g == a))) / np.sum(mass * ((y == 1) & (g == a)))) for a in (0, 1)]
    return err, abs(tpr[0] - tpr[1])


def _data(params: dict[str, Any], ctx: TrialContext) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                                               np.ndarray, np.ndarray]:
    """(train counts, eval masses, y, g, pred, eval label) for the trial's dataset."""
    name = str(params["dataset"])
    if name == "synthetic":
        prob, y, g, pred = synthetic_types(int(params["k"]), float(params["p_a"]),
                                           float(params["w"]), float(params["b"]))
        n = int(params["n_synthetic"])
        counts = ctx.rng("synthetic", n, scope="repetition").multinomial(n, prob / prob.sum())
        return counts, prob, y, g, pred, np.array(["population"])
    if name == "adult":
        type_of, y, g, pred, _ = adult_types()
        rng = ctx.rng("adult-split", scope="repetition")
        test = rng.random(type_of.size) < float(params["test_fraction"])
        ntypes = len(y)
        counts = np.bincount(type_of[~test], minlength=ntypes)
        mass = np.bincount(type_of[test], minlength=ntypes).astype(float)
        return counts, mass, y, g, pred, np.array(["held-out"])
    raise InvalidParameterError(f"dataset must be 'synthetic' or 'adult'; got {name!r}.")


CHECKPOINTS = (1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 70, 100, 150, 200, 300, 500, 700, 1000)


def run_trial(params: dict[str, Any], ctx: TrialContext) -> TrialOutput:
    """One Private-FairNR run (see the module docstring).

    Parameters
    ----------
    params
        ``dataset``, ``mode`` (nonprivate | paper | corrected), ``epsilon``, ``delta``, ``T``, ``m``,
        ``alpha`` (C = 1/α, DEC-20), ``beta``, ``slack`` (ξ, DEC-10), ``c0``, ``d`` (DEC-16).
    ctx
        ``ctx.rng(..., scope="repetition")`` draws the synthetic sample / the Adult split; ``ctx.rng()`` the noise.
    """
    mode = str(params["mode"])
    if mode not in fn.MODES:
        raise InvalidParameterError(f"mode must be one of {fn.MODES}; got {mode!r}.")
    eps, delta = float(params["epsilon"]), float(params["delta"])
    T, m = int(params["T"]), int(params["m"])
    alpha, beta = float(params["alpha"]), float(params["beta"])
    C = float(params.get("C", 1.0 / alpha))
    slack = float(params["slack"])
    c0, d = float(params["c0"]), float(params["d"])
    counts, eval_mass, y, g, pred, _ = _data(params, ctx)
    data = fn.TypeData(counts, y, g)
    n = data.n
    fdata, fpred = fn.flip_labels(data, pred)
    c = fairnr_unit.configure(mode, n=n, epsilon=eps, delta=delta, T=T, m=m, C=C)
    # The m·T matrix-vector products are small: multi-threaded BLAS only adds contention here.
    with threadpool_limits(limits=1):
        run = fn.private_fairnr(fpred, fdata, T=T, m=m, C=C, mode=mode, rng=ctx.rng(),
                                eps_prime=c.eps_prime if mode == "paper" else None, eps_step=c.eps_step, slack=slack)
    # Our accounting (the unit's): corrected = calibrated exactly; paper = ∞ (noiseless auditor, E-17), with the
    # learner's own releases bounded by heterogeneous advanced composition at their true sensitivity.
    eps_acc, eps_learner = c.accounted_epsilon(), c.learner_epsilon(run.lambdas)
    weights = run.mixture()
    uniform_err, _ = _mixture_metrics(np.full(pred.shape[0], 1.0 / pred.shape[0]), pred, eval_mass, y, g)
    err_eval, gap_eval = _mixture_metrics(weights, pred, eval_mass, y, g)
    err_train, gap_train = _mixture_metrics(weights, pred, counts.astype(float), y, g)
    opt = fn.lp_opt(fpred, fdata, 0.0)
    value, game_w = fn.game_value(fpred, fdata, C)
    game_err, game_gap = _mixture_metrics(game_w, pred, eval_mass, y, g)
    phi = fn.fp_violations(fpred, fdata)
    u_mix = float(weights @ fn.errors(fpred, fdata) + C * abs(weights @ phi))
    p_t, m_t = sc.alg3_paper_T(n, alpha, beta), sc.alg3_paper_m(n, alpha, beta, c0=c0, d=d, C=C)
    lhs, rhs = sc.alg3_eq2_sides(n, alpha, beta, eps, delta, c0=c0, d=d)
    eq2_n = sc.alg3_eq2_min_n(alpha, beta, eps, delta, c0=c0, d=d)
    record = {
        "method": METHODS[mode],
        "err": err_eval,
        "eo_gap": gap_eval,
        "err_train": err_train,
        "eo_gap_train": gap_train,
        "opt_err_train": opt,
        "excess_err_train": err_train - opt,
        "game_gap_train": u_mix - value,
        "uniform_err": uniform_err,
        "game_opt_err": game_err,
        "game_opt_eo_gap": game_gap,
        "eps_accounted": eps_acc,
        "eps_label": c.guarantee.label.value,
        "eps_learner_only": eps_learner,
        "eps_step": c.reported_step_epsilon,
        "noise_scale_last": float(run.scales[-1]),
        "n_train": float(n),
        "oracle_calls": float(m * T),
        "paper_T": p_t,
        "paper_m": m_t,
        "paper_oracle_calls": p_t * m_t,
        "paper_eta_at_our_T_m": sc.alg3_eta(n, eps, delta, T, m, C, beta, c0=c0, d=d),
        "paper_eq2_holds": float(lhs >= rhs),
        "paper_eq2_min_n": math.inf if eq2_n is None else eq2_n,
        "lemma4_eps_total": sc.lemma4_total_epsilon(eps, c.k_steps, delta),
    }
    curve = []
    for t in CHECKPOINTS:
        if t > T:
            break
        w_t = run.mixture(t)
        e, gp = _mixture_metrics(w_t, pred, eval_mass, y, g)
        curve.append({"dataset": str(params["dataset"]), "mode": mode, "epsilon": eps, "round": t, "err": e, "eo_gap": gp, "lambda": float(run.lambdas[t - 1]),
                      "noise_scale": float(run.scales[t - 1])})
    return TrialOutput(records=[record], tables={"rounds": curve})


STUDY = Study(run_trial=run_trial, values=("eps_label",), version="1")
