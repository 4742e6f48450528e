"""Thesis Part II theory checks: Lemma 13, Theorem 14, Lemma 16, the ε-LDP of every mechanism and (5.5.9).

One cell per check (``params['check']``):

``lemma13``
    Δ′ after GRR ≤ Δ′ before, on random (p, p_{1|·}, ε, k).
``lemma16``
    Δ ≤ Δ′/Pr(Y=1) and Δ′ ≤ 2 Pr(Y=1) Δ on random distributions.
``theorem14``
    Closed form (B.0.2 at Theorem 14's (p*, q*)) against a grid search over both tight LDP
    boundaries; the fixtures of spec §5.4 (synthetic p₀ and the datasets' gender p₀).
``ldp``
    max log-ratio − ε of GRR, SS (exact subset law), Theorem 14 and the non-binary OPT (both ζ)
    on the ε grid; the constraint violation of every OPT solution.
``zeta-one``
    With ζ = 1 the optimum of (5.5.9) is Δ = 0; the max-utility Pr(A = Z) of the tie-break.
``zeta-min``
    The ζ_min table of spec §5.5: ζ_min, Δ(OPT at ζ_min), Δ(GRR), Pr(A = Z) of GRR.

The non-binary checks run on ``params['epsilons_nonbinary']`` (default: the whole ε grid).

Spec: ../shared/specs/seed-003-thesis.md §5.3–5.5, §9.1 items 4–8, Appendix A.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from repro.engine.study import Study
from repro.engine.trial import TrialContext, TrialOutput
from repro.errors import InvalidParameterError
from repro.fairness.data_fairness import binary_ratio, delta, delta_prime, group_stats, perturbed_stats
from repro.privacy.ldp_mechanisms import (
    grr_matrix,
    ldp_epsilon,
    nonbinary_constraint_violation,
    optimal_binary_matrix,
    optimal_nonbinary_matrix,
    subset_selection_matrix,
    zeta_min,
)

EPS_GRID = (0.05, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 10.0)
ZETA_MARGIN = 1e-6


def _case_stats(case: str) -> tuple[np.ndarray, np.ndarray]:
    """Full-data (p, p1) of a dataset/attribute case, e.g. ``adult-race``."""
    if case.startswith("adult"):
        from repro.datasets.adult_reconstruction import load_adult_reconstruction

        frame, label = load_adult_reconstruction(), "income"
    else:
        from repro.datasets.lsac import load_lsac

        frame, label = load_lsac(), "pass_bar"
    attr = case.split("-", 1)[1]
    if attr == "race_gender":
        a = (frame["race"] * 2 + frame["gender"]).to_numpy()
    else:
        a = frame[attr].to_numpy()
    p, p1, _ = group_stats(a, frame[label].to_numpy())
    return p, p1


def grid_best_ratio(p0: float, epsilon: float, n: int = 200_001) -> tuple[float, float, float]:
    """min of (B.0.2) over both tight boundaries (q = e^ε(1−p) or p = e^ε(1−q)) in the feasible set.

    Each boundary is parametrized by the free coordinate on a uniform grid of [½, 1] (the other one,
    1 − x e^{−ε}, then spans a short interval at large ε without losing resolution).
    """
    e = math.exp(epsilon)
    x = np.linspace(0.5, 1.0, n)
    best = (math.inf, math.nan, math.nan)
    for p, q in ((1 - x / e, x), (x, 1 - x / e)):  # q = e^ε(1−p) tight, or p = e^ε(1−q) tight
        ok = (p >= 0.5) & (p <= 1) & (q >= 0.5) & (q <= 1) & (p <= e * (1 - q) + 1e-12) & (q <= e * (1 - p) + 1e-12)
        if ok.any():
            r = binary_ratio(p0, p[ok], q[ok])
            i = int(np.argmin(r))
            if r[i] < best[0]:
                best = (float(r[i]), float(p[ok][i]), float(q[ok][i]))
    return best


def _lemma13(n: int, rng: np.random.Generator) -> list[dict[str, Any]]:
    excess = []
    for _ in range(n):
        k = int(rng.integers(2, 11))
        p, p1 = rng.dirichlet(np.ones(k)), rng.random(k)
        pz, p1z = perturbed_stats(p, p1, grr_matrix(k, float(rng.uniform(0.01, 10))))
        excess.append(delta_prime(pz, p1z) - delta_prime(p, p1))
    ex = np.array(excess)
    return [{"violations": int(np.sum(ex > 1e-12)), "max_excess": float(ex.max()), "n_checked": n}]


def _lemma16(n: int, rng: np.random.Generator) -> list[dict[str, Any]]:
    e1, e2 = [], []
    for _ in range(n):
        k = int(rng.integers(2, 11))
        p, p1 = rng.dirichlet(np.ones(k)), rng.random(k)
        py = float(p @ p1)
        d, dp = delta(p, p1), delta_prime(p, p1)
        e1.append(d - dp / py)
        e2.append(dp - 2 * py * d)
    ex = np.maximum(np.array(e1), np.array(e2))
    return [{"violations": int(np.sum(ex > 1e-12)), "max_excess": float(ex.max()), "n_checked": n}]


def _theorem14(grid_n: int) -> list[dict[str, Any]]:
    rows = []
    p0s = [("synthetic", 0.3, (0.2, 1.0, 4.0)), ("synthetic", 0.7, (1.0,))]
    for case in ("adult-gender", "lsac-gender"):
        p, _ = _case_stats(case)
        p0s.append((case, float(p[0]), EPS_GRID))
    for case, p0, grid in p0s:
        for eps in grid:
            minority = 0 if p0 < 0.5 else 1
            q = optimal_binary_matrix(eps, minority)
            o = optimal_binary_matrix(eps, 1 - minority)
            e = math.exp(eps)
            best, bp, bq = grid_best_ratio(p0, eps, grid_n)
            opt = binary_ratio(p0, q[0, 0], q[1, 1])
            rows.append({"case": case, "p0": round(p0, 4), "epsilon": eps, "opt_ratio": opt, "grid_ratio": best,
                         "grid_minus_opt": best - opt, "other_ratio": binary_ratio(p0, o[0, 0], o[1, 1]),
                         "rr_ratio": binary_ratio(p0, e / (e + 1), e / (e + 1)),
                         "ldp_excess": ldp_epsilon(q) - eps})
    return rows


_NONBINARY = ("adult-race", "lsac-fam_inc", "adult-race_gender")


def _ldp(eps_nonbinary: tuple[float, ...]) -> list[dict[str, Any]]:
    rows = []
    for eps in EPS_GRID:
        for k in (2, 5, 10):
            rows.append({"mechanism": "GRR", "k": k, "epsilon": eps, "ldp_excess": ldp_epsilon(grr_matrix(k, eps)) - eps})
            rows.append({"mechanism": "SS", "k": k, "epsilon": eps,
                         "ldp_excess": ldp_epsilon(subset_selection_matrix(k, eps)[0]) - eps})
        rows.append({"mechanism": "OPT-binary", "k": 2, "epsilon": eps,
                     "ldp_excess": ldp_epsilon(optimal_binary_matrix(eps, 0)) - eps})
    for case in _NONBINARY:
        p, p1 = _case_stats(case)
        for eps in eps_nonbinary:
            for mode in ("one", "min"):
                zeta = 1.0 if mode == "one" else zeta_min(p, eps) + ZETA_MARGIN
                sol = optimal_nonbinary_matrix(p, p1, eps, zeta=zeta)
                rows.append({"mechanism": f"OPT-{case}-zeta-{mode}", "k": p.size, "epsilon": eps,
                             "ldp_excess": ldp_epsilon(sol.matrix) - eps,
                             "constraint_violation": nonbinary_constraint_violation(sol.matrix, eps, p, zeta)})
    return rows


def _zeta_one(eps_grid: tuple[float, ...]) -> list[dict[str, Any]]:
    rows = []
    for case in _NONBINARY:
        p, p1 = _case_stats(case)
        for eps in eps_grid:
            sol = optimal_nonbinary_matrix(p, p1, eps)
            rows.append({"case": case, "epsilon": eps, "delta_opt": sol.delta, "utility_opt": sol.utility,
                         "delta_data": delta(p, p1)})
    return rows


def _zeta_min(eps_grid: tuple[float, ...]) -> list[dict[str, Any]]:
    rows = []
    for case in _NONBINARY:
        p, p1 = _case_stats(case)
        for eps in eps_grid:
            z = zeta_min(p, eps)
            sol = optimal_nonbinary_matrix(p, p1, eps, zeta=min(1.0, z + ZETA_MARGIN))
            q = grr_matrix(p.size, eps)
            pz, p1z = perturbed_stats(p, p1, q)
            rows.append({"case": case, "epsilon": eps, "zeta_min": z, "delta_opt": sol.delta,
                         "utility_opt": sol.utility, "delta_grr": delta(pz, p1z),
                         "utility_grr": float(p @ np.diag(q))})
    return rows


def run_trial(params: dict[str, Any], ctx: TrialContext) -> TrialOutput:
    """Run one theory check (``params['check']``); every record is one verified instance."""
    check = str(params["check"])
    n = int(params["n_random"])
    eps_nb = tuple(float(e) for e in params["epsilons_nonbinary"])
    if check == "lemma13":
        rows = _lemma13(n, ctx.rng())
    elif check == "lemma16":
        rows = _lemma16(n, ctx.rng())
    elif check == "theorem14":
        rows = _theorem14(int(params["grid_points"]))
    elif check == "ldp":
        rows = _ldp(eps_nb)
    elif check == "zeta-one":
        rows = _zeta_one(eps_nb)
    elif check == "zeta-min":
        rows = _zeta_min(eps_nb)
    else:
        raise InvalidParameterError(
            f"check must be one of lemma13, lemma16, theorem14, ldp, zeta-one, zeta-min; got {check!r}")
    return TrialOutput(records=rows)


#: record keys that identify a row besides the grid keys
STUDY = Study(run_trial=run_trial, index=("case", "p0", "epsilon", "mechanism", "k"), version="1")
