"""Figures and report text for :mod:`repro.studies.thesis.ldp_theory` (drawn from saved results only).

Kept apart from the study so that editing a figure or the wording never changes the trial cache key.
"""

from __future__ import annotations

from typing import Any


def report_markdown(bundle: Any) -> str:
    """Plain-English verdict per check, from trials.csv."""
    t = bundle.trials
    lines = []

    checks = t["check"]  # the grid column, never parsed from the setting label

    def sel(check: str):
        return t[checks == check]

    d = sel("lemma13")
    if not d.empty:
        lines.append(f"- Lemma 13 (GRR never increases Δ′): {int(d['violations'].sum())} violations in "
                     f"{int(d['n_checked'].sum())} random instances; max Δ′_after − Δ′ = {d['max_excess'].max():.3g}.")
    d = sel("lemma16")
    if not d.empty:
        lines.append(f"- Lemma 16 (Δ ≤ Δ′/Pr(Y=1), Δ′ ≤ 2Pr(Y=1)Δ): {int(d['violations'].sum())} violations in "
                     f"{int(d['n_checked'].sum())} instances; max excess {d['max_excess'].max():.3g}.")
    d = sel("theorem14")
    if not d.empty:
        lines.append(f"- Theorem 14: closed form ≤ grid search over both tight boundaries in "
                     f"{int((d['grid_minus_opt'] >= -1e-12).sum())}/{len(d)} instances (largest gap "
                     f"{d['grid_minus_opt'].max():.2g}); closed form < RR in {int((d['opt_ratio'] < d['rr_ratio']).sum())}"
                     f"/{len(d)}; exact ε-LDP (|max log-ratio − ε| ≤ 1e-9) in "
                     f"{int((d['ldp_excess'].abs() <= 1e-9).sum())}/{len(d)}.")
    d = sel("ldp")
    if not d.empty:
        cv = d["constraint_violation"].max() if "constraint_violation" in d else float("nan")
        lines.append(f"- ε-LDP of every mechanism matrix: max(log-ratio − ε) = {d['ldp_excess'].max():.2g} over "
                     f"{len(d)} matrices (must be ≤ 1e-9); max constraint violation of the (5.5.9) solutions "
                     f"{cv:.2g}.")
    d = sel("zeta-one")
    if not d.empty:
        lines.append(f"- ζ = 1: optimal Δ ≤ {d['delta_opt'].max():.2g} in all {len(d)} (case, ε) instances "
                     "(Δ = 0 up to the 1e-6 tie-break slack): the authors' setting makes Z independent of Y.")
    d = sel("zeta-min")
    if not d.empty:
        ratio = (d["delta_opt"] / d["delta_grr"]).to_numpy()
        lines.append(f"- ζ = ζ_min: Δ(OPT)/Δ(GRR) ranges over [{ratio.min():.3f}, {ratio.max():.3f}]: with the "
                     "thesis text's ζ, OPT is nearly the maximum-utility mechanism and barely fairer than GRR "
                     "(decision L1).")
    s = bundle.summary
    judged = s[s["within"].notna()]
    if not judged.empty:
        ok = judged["within"].astype(str).str.lower().isin(["true", "1", "1.0"]).sum()
        lines.append(f"- Spec fixtures (§5.4, §5.5): {ok}/{len(judged)} within tolerance.")
    return "\n".join(lines)
