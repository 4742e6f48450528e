"""Study module for ``experiments/compat-impossibility.toml`` (Cummings et al. 2019, Theorem 1).

Runs one of the checks C1–C5 of spec §2.5 per grid cell with exact rational arithmetic (see
:mod:`repro.theory.compat_impossibility`), draws one summary figure from the saved results and
writes a plain-English verdict. Everything about the 8-point construction, the δ ≥ ½ bound and the
slack analysis is ours [X], not the paper's, and is labelled so.

Spec: seed-000-002-compat.md §2.2–§2.5, §6 (R-T1), §8 (DEC-1, DEC-2, DEC-3, DEC-27).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from repro.engine.study import Study
from repro.engine.trial import TrialContext, TrialOutput
from repro.theory import compat_impossibility as ci

__all__ = ["STUDY", "CHECKS", "run_trial"]


CHECKS = ("C1-paper", "C2-counterexample", "C3-repaired", "C4-privacy-loss", "C5-slack")
OURS = "(ours, not the paper's)"
DEFAULT_GRID_STEP = "1/10"
DEFAULT_ALPHA = "1/10"
DEFAULT_BETA = 10.0
#: the summary's ``method`` column: what each check examines ([P] the paper's, [X] ours)
SUBJECTS = {"C1-paper": "printed construction D, D' [P]", "C2-counterexample": "counterexample h* [X]",
            "C3-repaired": "repaired 8-point construction [X]", "C4-privacy-loss": "privacy loss on D, D' [X]",
            "C5-slack": "slack relaxation [X]"}


def _render(value: Any) -> Any:
    """Table cell: Fractions as exact strings ("1/4"), hypotheses as "(0,1,0,1)", bools kept."""
    if isinstance(value, bool):
        return value
    if isinstance(value, Fraction):
        return str(value)
    if isinstance(value, tuple):
        return ci.format_hypothesis(value)
    return value


def _rows(rows: list[dict[str, object]], **extra: Any) -> list[dict[str, Any]]:
    return [{**{k: _render(v) for k, v in extra.items()}, **{k: _render(v) for k, v in row.items()}} for row in rows]


def _fraction(params: dict[str, Any], key: str, default: str) -> Fraction:
    return Fraction(str(params.get(key, default)))


def run_trial(params: dict[str, Any], ctx: TrialContext) -> TrialOutput:
    """Run the check named by ``params["check"]`` at ``params["zeta"]`` (spec §2.5).

    Parameters
    ----------
    params
        ``check`` (one of :data:`CHECKS`), ``zeta`` (a rational string such as "1/100"),
        ``grid_step`` (randomized-hypothesis grid, default "1/10"), ``alpha`` (C5 slack, default
        "1/10"), ``n_distributions`` (C2). ``variant`` is ignored (always "paper").
    ctx
        Only C2 draws randomness (``ctx.rng()``); every other check is deterministic.

    Returns
    -------
    TrialOutput
        One record of scalar metrics (floats) and exact per-hypothesis tables.
    """
    out = _dispatch(params, ctx)
    for record in out.records:
        record.setdefault("method", SUBJECTS[str(params["check"])])
    return out


def _dispatch(params: dict[str, Any], ctx: TrialContext) -> TrialOutput:
    check = str(params["check"])
    zeta = Fraction(str(params["zeta"]))
    step = _fraction(params, "grid_step", DEFAULT_GRID_STEP)
    if check == "C1-paper":
        return _run_paper(zeta, step)
    if check == "C2-counterexample":
        return _run_counterexample(zeta, int(params["n_distributions"]), ctx)
    if check == "C3-repaired":
        return _run_repaired(zeta, step)
    if check == "C4-privacy-loss":
        return _run_privacy_loss(zeta, step, float(params["beta"]))
    if check == "C5-slack":
        return _run_slack(zeta, _fraction(params, "alpha", DEFAULT_ALPHA), step)
    raise ValueError(f"unknown check {check!r}; expected one of {CHECKS}")


def _privacy_rows(
    construction: str, algorithm: str, zeta: Fraction, pairs: dict[tuple[str, str], tuple[dict, dict]]
) -> list[dict[str, Any]]:
    rows = []
    for (neighbour, direction), (p, q) in pairs.items():
        loss = ci.privacy_loss(p, q)
        for eps in ci.EPSILON_GRID:
            delta = ci.hockey_stick_delta(p, q, eps)
            rows.append(
                {
                    "construction": construction,
                    "zeta": str(zeta),
                    "algorithm": algorithm,
                    "neighbour": neighbour,
                    "direction": direction,
                    "epsilon": eps,
                    "delta": float(delta),
                    "delta_exact": str(delta),
                    "max_log_ratio": loss.max_log_ratio,
                    "impossible_mass": str(loss.impossible_mass),
                }
            )
    return rows


def _run_paper(zeta: Fraction, step: Fraction) -> TrialOutput:
    """C1: the printed construction (spec §2.3, E-4)."""
    res = ci.check_paper(zeta, step)
    d, dp = ci.ExactModel(ci.PAPER_FEATURES, ci.paper_distribution()), ci.ExactModel(
        ci.PAPER_FEATURES, ci.paper_neighbour(zeta)
    )
    h = ci.COUNTEREXAMPLE
    grid = ci.hypothesis_grid(step, 4)
    p = ci.uniform_algorithm(grid, d.is_fair_nontrivial)
    q = ci.uniform_algorithm(grid, dp.is_fair_nontrivial)
    pairs = {("D'", "D->D'"): (p, q), ("D'", "D'->D"): (q, p)}
    privacy = _privacy_rows("paper (as printed)", "uniform-feasible", zeta, pairs)
    record = {
        "eo_nontrivial_on_D": res.eo_nontrivial_on_D,
        "still_fair_on_Dprime": res.still_fair_on_Dprime,
        "witnesses": res.witnesses,
        "separates": int(res.separates),
        "grid_eo_nontrivial_on_D": res.grid_eo_nontrivial,
        "grid_witnesses": res.grid_witnesses,
        "gamma10_Dprime": float(dp.gamma(h, 1, 0)),
        "gamma11_Dprime": float(dp.gamma(h, 1, 1)),
        "eo_gap_Dprime": float(dp.eo_gap(h)),
        "joint10_Dprime": float(dp.joint_positive(h, 1, 0)),
        "joint11_Dprime": float(dp.joint_positive(h, 1, 1)),
        "statistical_distance": float(res.statistical_distance),
        "constant_error_D": float(res.constant_error_D),
        "identities_hold": int(res.identities_hold),
        "max_privacy_loss": max(r["max_log_ratio"] for r in privacy),
        "min_delta_bound": min(max(r["delta"] for r in privacy if r["epsilon"] == e) for e in ci.EPSILON_GRID),
    }
    return TrialOutput(
        records=[record],
        tables={"paper_hypotheses": _rows(res.rows, zeta=zeta), "privacy_loss": privacy},
    )


def _run_counterexample(zeta: Fraction, n_distributions: int, ctx: TrialContext) -> TrialOutput:
    """C2: h* = (0,1,0,1) on random full-support D and on the paper's D, D′ (spec §2.3, §2.5 C2)."""
    res = ci.check_counterexample(ctx.rng(), n_distributions, zeta)
    n_total = res.n_distributions + 2
    holds = res.n_holds + (2 if res.holds_on_paper_pair else 0)
    p = ci.constant_algorithm(ci.COUNTEREXAMPLE, ci.paper_distribution())
    q = ci.constant_algorithm(ci.COUNTEREXAMPLE, ci.paper_neighbour(zeta))
    privacy = _privacy_rows(
        "paper (as printed)", "constant h*", zeta, {("D'", "D->D'"): (p, q), ("D'", "D'->D"): (q, p)}
    )
    record = {
        "counterexample_holds": holds / n_total,
        "max_privacy_loss": res.max_privacy_loss,
        "min_delta_bound": float(res.delta_at_zero),
    }
    return TrialOutput(records=[record], tables={"privacy_loss": privacy})


def _run_repaired(zeta: Fraction, step: Fraction) -> TrialOutput:
    """C3 [X]: the repaired 8-point construction (spec §2.4, §2.5 C3)."""
    res = ci.check_repaired(zeta, step)
    d0 = ci.ExactModel(ci.REPAIRED_FEATURES, ci.repaired_neighbour(0, zeta))
    h = ci.REPAIRED_UNIQUE
    fair = [r for r in res.rows if r["eo_D"] and r["nontrivial_D"]]
    still = sum(
        1
        for r in fair
        if (r["eo_Dprime0"] if r["in_S0"] else r["eo_Dprime1"])
    )
    record = {
        "eo_nontrivial_on_D": res.eo_nontrivial_on_D,
        "still_fair_on_Dprime": still,
        "witnesses": res.witnesses,
        "separates": int(res.separates and res.grid_witnesses == res.grid_eo_nontrivial),
        "grid_eo_nontrivial_on_D": res.grid_eo_nontrivial,
        "grid_witnesses": res.grid_witnesses,
        "gamma10_Dprime": float(res.gamma10_Dprime0),
        "gamma11_Dprime": float(res.gamma11_Dprime0),
        "eo_gap_Dprime": float(d0.eo_gap(h)),
        "statistical_distance": float(res.statistical_distance),
        "constant_error_D": float(ci.ExactModel(ci.REPAIRED_FEATURES, ci.repaired_distribution()).constant_error()),
        "identities_hold": int(res.identities_hold and res.grid_in_s0_s1 == res.grid_eo_nontrivial),
    }
    return TrialOutput(
        records=[record],
        tables={"repaired_hypotheses": _rows(res.rows, zeta=zeta, source="ours [X]")},
    )


def _run_privacy_loss(zeta: Fraction, step: Fraction, beta: float) -> TrialOutput:
    """C4 [X]: privacy loss of always-EO, non-trivial algorithms (spec §2.4 repaired theorem, C4)."""
    res = ci.check_privacy_loss(zeta, step, ci.EPSILON_GRID, beta)
    rows = [
        {
            "construction": "repaired [X]",
            **{k: (float(v) if k == "delta" else _render(v)) for k, v in row.items()},
            "delta_exact": str(row["delta"]),
        }
        for row in res.rows
    ]
    for row in rows:
        row["impossible_mass"] = str(row["impossible_mass"])
    record = {
        "max_privacy_loss": res.max_log_ratio,
        "delta_floor": float(res.delta_floor),
        "min_delta_bound": float(res.min_delta_bound),
        "grid_eo_nontrivial_on_D": min(res.n_feasible.values()),
        "identities_hold": int(all(s0 + s1 == 1 for s0, s1 in res.s_masses.values())),
    }
    return TrialOutput(records=[record], tables={"privacy_loss": rows})


def _run_slack(zeta: Fraction, alpha: Fraction, step: Fraction) -> TrialOutput:
    """C5 [X]: with slack α > 0 a single ζ-step breaks only low-slack hypotheses (spec §2.5 C5)."""
    res = ci.check_slack(zeta, alpha, step)
    record = {
        "grid_eo_nontrivial_on_D": res.n_fair,
        "grid_witnesses": res.n_broken,
        "surviving_fraction": float(res.surviving_fraction),
        "delta_floor": float(res.delta_floor),
        "identities_hold": int(res.rule_holds),
    }
    return TrialOutput(records=[record], tables={"slack": _rows(res.rows, source="ours [X]")})


STUDY = Study(run_trial=run_trial, version="1")
