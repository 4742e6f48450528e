"""Study module of ``experiments/audit.toml``: one privacy audit per (mechanism, instance) cell.

``instance = "claimed"`` audits the mechanism as the project runs and accounts it; ``"broken"`` runs
the broken-mechanism control (:mod:`repro.studies.audit.mechanisms`; the shipped-configuration audits of the
subsampled mechanisms: :mod:`repro.studies.audit.subsampled`). Each trial draws its randomness
from ``ctx.rng()``, whose seed is keyed by the cell (mechanism and instance names), so an audit's
result does not depend on which other mechanisms run beside it (issue 20, items 3 and 5).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from repro.engine.study import Study
from repro.engine.trial import TrialContext, TrialOutput
from repro.errors import InvalidParameterError
from repro.studies.audit.bounds import gdp_mu_lower_bound
from repro.studies.audit.cnn_step import CNN_STEP
from repro.studies.audit.fairnr_auditor import FAIRNR_AUDITOR
from repro.studies.audit.mechanisms import MECHANISMS, AuditResult, Mechanism, audit
from repro.studies.audit.subsampled import SHIPPED

INSTANCES = ("claimed", "broken")
#: columns of the ``audit`` table (audit.csv), one row per audited instance
TABLE_COLUMNS = ("mechanism", "instance", "label", "claimed_epsilon", "delta", "achievable_epsilon",
                 "achievable_how", "audited_epsilon", "ratio", "confidence", "method", "runs_per_side",
                 "verdict", "control", "note", "best_delta", "claimed_epsilon_at_best", "audited_epsilon_at_best",
                 "ratio_at_best", "profile_how", "relation", "ratio_headline", "gdp_mu_lower", "gdp_mu_claimed",
                 "intended_noise_std", "observed_noise_std", "intended_q", "observed_q", "steps", "ceiling_ratio",
                 "informative")
#: the audits outside :mod:`~repro.studies.audit.mechanisms`: the shipped-configuration audits
#: (:mod:`~repro.studies.audit.subsampled`) and FairNR's auditor step (:mod:`~repro.studies.audit.fairnr_auditor`)
OWN: dict[str, Mechanism] = {**SHIPPED, **FAIRNR_AUDITOR, **CNN_STEP}
#: every audited mechanism
REGISTRY: dict[str, Mechanism] = {**MECHANISMS, **OWN}
#: columns of the ``tradeoff`` table (tradeoff.csv): the claimed trade-off curve ("claimed": x = α, y = f(α)),
#: the claimed profile ("profile": x = ε, y = δ(ε)) and the empirical points ("empirical": x = α̂, y = β̂ and
#: their simultaneous upper bounds x_up, y_up), per audited instance (issue 38)
TRADEOFF_COLUMNS = ("mechanism", "instance", "kind", "x", "y", "x_up", "y_up")
#: α grid of the stored claimed trade-off curve (log-spaced: the curves matter most at small α)
CURVE_ALPHA = np.r_[0.0, np.geomspace(1e-5, 1.0, 120)]


def table_row(r: AuditResult, instance: str) -> dict[str, Any]:
    """One row of the ``audit`` table. ``ratio_headline``: the bound at the best δ over the headline claimed ε;
    ``gdp_mu_lower``: the Gaussian-DP μ the empirical trade-off certifies (statistical audits); the shipped
    audits add the intended and observed noise std and inclusion rate, the claim's central-limit μ and the
    design's oracle ceiling (``informative`` is 0 where that ceiling is below 0.5 of the claim)."""
    nan = math.nan
    extra = {k: float(getattr(r, k, nan)) for k in ("gdp_mu_claimed", "intended_noise_std", "observed_noise_std",
                                                      "observed_q", "ceiling_ratio")}
    extra["intended_q"] = float(getattr(r, "q", nan))
    extra["steps"] = float(getattr(r, "steps", 0)) or nan
    extra["gdp_mu_lower"] = (gdp_mu_lower_bound(r.tradeoff.alpha_up, r.tradeoff.beta_up) if r.tradeoff is not None
                             else nan)
    extra["informative"] = nan if math.isnan(extra["ceiling_ratio"]) else float(extra["ceiling_ratio"] >= 0.5)
    extra["ratio_headline"] = r.audited_at_best / r.claimed_epsilon if r.claimed_epsilon > 0 else nan
    row = {"mechanism": r.mechanism, "instance": instance, "label": r.label.value,
           "relation": r.claim.relation.value, "claimed_epsilon": r.claimed_epsilon,
           "delta": r.delta, "achievable_epsilon": r.achievable_epsilon, "achievable_how": r.achievable_how,
           "audited_epsilon": r.audited_epsilon, "ratio": r.ratio, "confidence": r.confidence, "method": r.method,
           "runs_per_side": r.runs_per_side, "verdict": r.verdict, "control": REGISTRY[r.mechanism].control,
           "note": r.note, "best_delta": r.best_delta, "claimed_epsilon_at_best": r.claimed_at_best,
           "audited_epsilon_at_best": r.audited_at_best, "ratio_at_best": r.ratio_at_best,
           "profile_how": r.profile.how if r.profile is not None else ""}
    merged = {**row, **extra}
    return {k: merged[k] for k in TABLE_COLUMNS}


def tradeoff_rows(r: AuditResult, instance: str) -> list[dict[str, Any]]:
    """Rows of the ``tradeoff`` table: the claimed curve and profile, and the empirical points (if any)."""
    if r.profile is None:
        return []
    nan = math.nan
    rows = [{"mechanism": r.mechanism, "instance": instance, "kind": "claimed", "x": float(a), "y": float(f),
             "x_up": nan, "y_up": nan} for a, f in zip(CURVE_ALPHA, r.profile.tradeoff(CURVE_ALPHA), strict=True)]
    eps = np.linspace(0.0, 1.5 * r.claimed_epsilon, 31)
    rows += [{"mechanism": r.mechanism, "instance": instance, "kind": "profile", "x": float(e), "y": float(d),
              "x_up": nan, "y_up": nan} for e, d in zip(eps, r.profile.delta(eps), strict=True)]
    if r.tradeoff is not None:
        t = r.tradeoff
        rows += [{"mechanism": r.mechanism, "instance": instance, "kind": "empirical", "x": float(a), "y": float(b),
                  "x_up": float(au), "y_up": float(bu)}
                 for a, b, au, bu in zip(t.alpha_hat, t.beta_hat, t.alpha_up, t.beta_up, strict=True)]
    return rows


def run_trial(params: dict[str, Any], ctx: TrialContext) -> TrialOutput:
    """Audit ``params["mechanism"]`` (instance ``params["instance"]``) with the runs of ``params["budget"]``."""
    name, instance = params["mechanism"], params["instance"]
    if instance not in INSTANCES:
        raise ValueError(f"instance must be one of {INSTANCES}; got {instance!r}")
    if name not in REGISTRY:
        raise InvalidParameterError(f"unknown mechanism {name!r}; choose from {', '.join(REGISTRY)}")
    if instance == "broken" and not REGISTRY[name].control:
        nan = math.nan
        return TrialOutput(records=[{"claimed_epsilon": nan, "achievable_epsilon": nan, "audited_epsilon": nan,
                                     "ratio": nan, "ratio_at_best": nan, "exceeded": nan}])
    if name in OWN:
        mech, budget = OWN[name], params["budget"]
        if budget not in mech.runs:
            raise InvalidParameterError(f"budget must be 'smoke' or 'full'; got {budget!r}")
        r = mech.run(mech.runs[budget], ctx.rng(), broken=instance == "broken")
    else:
        r = audit(name, params["budget"], ctx.rng(), broken=instance == "broken")
    return TrialOutput(
        records=[{"claimed_epsilon": r.claimed_epsilon, "achievable_epsilon": r.achievable_epsilon,
                 "audited_epsilon": r.audited_epsilon, "ratio": r.ratio, "ratio_at_best": r.ratio_at_best,
                  "exceeded": float(r.exceeded)}],
        tables={"audit": [table_row(r, instance)], "tradeoff": tradeoff_rows(r, instance)})


STUDY = Study(run_trial=run_trial, version="2")
