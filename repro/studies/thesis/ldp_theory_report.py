"""Figures and report text for :mod:`repro.studies.thesis.ldp_theory` (drawn from saved results only).

Kept apart from the study so that editing a figure or the wording never changes the trial cache key. The
verdicts and their tolerances are the experiment's ``[[claims]]`` (spec seed-003 §9.1 items 4–7), judged on
the summary by :mod:`repro.engine.claims`; this module renders them with the numbers behind them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from repro.engine.claims import evaluate_all


def _verdict(ok: bool | None) -> str:
    return "" if ok is None else (" → **holds**" if ok else " → **does not hold**")


def _threshold(bundle: Any, name: str) -> Any:
    return next((c.threshold for c in bundle.spec.claims if c.name == name), None)


def _lemma13(d: pd.DataFrame, bundle: Any) -> str:
    return (f"Lemma 13 (GRR never increases Δ′): {int(d['violations'].sum())} violations in "
            f"{int(d['n_checked'].sum())} random instances; max Δ′_after − Δ′ = {d['max_excess'].max():.3g}")


def _lemma16(d: pd.DataFrame, bundle: Any) -> str:
    return (f"Lemma 16 (Δ ≤ Δ′/Pr(Y=1), Δ′ ≤ 2Pr(Y=1)Δ): {int(d['violations'].sum())} violations in "
            f"{int(d['n_checked'].sum())} instances; max excess {d['max_excess'].max():.3g}")


def _theorem14(d: pd.DataFrame, bundle: Any) -> str:
    slack = _threshold(bundle, "theorem14-optimal") or 0.0
    ldp = _threshold(bundle, "theorem14-exact-ldp") or 0.0
    return (f"Theorem 14: closed form ≤ grid search over both tight boundaries in "
            f"{int((d['grid_minus_opt'] >= -slack).sum())}/{len(d)} instances (largest gap "
            f"{d['grid_minus_opt'].max():.2g}); closed form < RR in {int((d['opt_ratio'] < d['rr_ratio']).sum())}"
            f"/{len(d)}; exact ε-LDP (|max log-ratio − ε| ≤ {ldp:g}) in "
            f"{int((d['ldp_excess'].abs() <= ldp).sum())}/{len(d)}")


def _ldp(d: pd.DataFrame, bundle: Any) -> str:
    cv = d["constraint_violation"].max() if "constraint_violation" in d else float("nan")
    return (f"ε-LDP of every mechanism matrix: max(log-ratio − ε) = {d['ldp_excess'].max():.2g} over "
            f"{len(d)} matrices (must be ≤ {_threshold(bundle, 'ldp-every-mechanism'):g}); max constraint "
            f"violation of the (5.5.9) solutions {cv:.2g}")


def _zeta_one(d: pd.DataFrame, bundle: Any) -> str:
    return (f"ζ = 1: optimal Δ ≤ {d['delta_opt'].max():.2g} in all {len(d)} (case, ε) instances "
            f"(Δ = 0 up to the tie-break slack, criterion ≤ {_threshold(bundle, 'zeta-one-fair'):g}): the authors' setting makes "
            "Z independent of Y")


def _zeta_min(d: pd.DataFrame, bundle: Any) -> str:
    ratio = (d["delta_opt"] / d["delta_grr"]).to_numpy()
    return (f"ζ = ζ_min: Δ(OPT)/Δ(GRR) ranges over [{ratio.min():.3f}, {ratio.max():.3f}]: with the thesis text's "
            "ζ, OPT is nearly the maximum-utility mechanism and barely fairer than GRR (decision L1)")


#: per check (the grid's `check` column): its line and the claims that judge it
_CHECKS: tuple[tuple[str, Callable[[pd.DataFrame, Any], str], tuple[str, ...]], ...] = (
    ("lemma13", _lemma13, ("lemma13",)),
    ("lemma16", _lemma16, ("lemma16",)),
    ("theorem14", _theorem14, ("theorem14-optimal", "theorem14-not-worse-than-rr", "theorem14-exact-ldp")),
    ("ldp", _ldp, ("ldp-every-mechanism",)),
    ("zeta-one", _zeta_one, ("zeta-one-fair",)),
    ("zeta-min", _zeta_min, ()),
)


def _combined(verdicts: dict[str, bool | None], names: tuple[str, ...]) -> bool | None:
    judged = [verdicts.get(n) for n in names if verdicts.get(n) is not None]
    return all(judged) if judged else None


def report_markdown(bundle: Any) -> str:
    """Plain-English verdict per check: the numbers from trials.csv, the verdicts from the ``[[claims]]``."""
    t = bundle.trials
    verdicts = evaluate_all(bundle.spec.claims, bundle.summary, params=bundle.run.get("params", {}))
    lines = []
    for check, render, names in _CHECKS:
        d = t[t["check"] == check]   # the grid column, never parsed from the setting label
        if not d.empty:
            lines.append(f"- {render(d, bundle)}{_verdict(_combined(verdicts, names))}.")
    s = bundle.summary
    judged = s[s["within"].notna()]
    if not judged.empty:
        ok = judged["within"].astype(str).str.lower().isin(["true", "1", "1.0"]).sum()
        lines.append(f"- Spec fixtures (§5.4, §5.5): {ok}/{len(judged)} within tolerance.")
    return "\n".join(lines)
