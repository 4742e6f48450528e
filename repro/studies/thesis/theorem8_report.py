"""Figures and report text for :mod:`repro.studies.thesis.theorem8` (drawn from saved results only).

Kept apart from the study so that editing a figure or the wording never changes the trial cache key.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def plot(bundle, outdir: Path) -> list[Path]:
    """Distribution of Δ_SP over Algorithm 2 runs (quantiles) against the Theorem 8 / Prop. 9 bounds."""
    from repro.plotting import new_figure, save_figure

    t = bundle.trials
    rows = t[t["check"] == "theorem8"] if "check" in t else t.iloc[0:0]
    fig, axes = new_figure(width=4.2, height=3.0)
    ax = axes[0][0]
    q = bundle.table("theorem8_quantiles", default=None)
    for i, (ds, g) in enumerate(rows.groupby("dataset")):
        x = np.full(1, i)
        ax.scatter(x, [g["mean_sp_gap"].mean()], color="C0", marker="o", zorder=3,
                   label="mean Δ_SP (ours)" if i == 0 else None)
        ax.scatter(x, [g["max_sp_gap"].max()], color="C0", marker="x", zorder=3,
                   label="max Δ_SP over runs" if i == 0 else None)
        if q is not None and "dataset" in q:
            qq = q[q["dataset"] == ds]
            q95 = qq[qq["quantile"] == 0.95]["sp_gap"]
            if not q95.empty:
                ax.scatter(x, [q95.mean()], color="C0", marker="^", label="95 % quantile" if i == 0 else None)
        ax.hlines(g["t8_sp_bound"].mean(), i - 0.3, i + 0.3, color="C3",
                  label=f"Theorem 8(b) bound, η = {bundle.spec.params.get('eta', 0.05):g}" if i == 0 else None)
        ax.hlines(g["p9_bound"].mean(), i - 0.3, i + 0.3, color="C2", linestyle="--",
                  label="Proposition 9 bound (mean)" if i == 0 else None)
    ax.set_xticks(range(rows["dataset"].nunique()), sorted(rows["dataset"].unique()))
    ax.set_yscale("log")
    ax.set_ylabel("population Δ_SP after Algorithm 2")
    ax.set_title("Theorem 8 / Proposition 9: Δ_SP of Algorithm 2 vs bounds", fontsize=8)
    ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2)
    return save_figure(fig, outdir, "thesis-theorem-8")


def report_markdown(bundle) -> str:
    t = bundle.trials
    lines = []
    if "check" not in t:
        return ""
    for _, r in t[t["check"] == "theorem8"].groupby("dataset").mean(numeric_only=True).iterrows():
        lines.append(
            f"- Theorem 8 on {r.name}: α = {r.alpha:.4f}, β = {r.beta:.4f}; bound (b) = {r.t8_sp_bound:.4f}, "
            f"share of runs inside = {r.t8_share_within:.4f} (claim ≥ 1 − η); mean Δ_SP = {r.mean_sp_gap:.4f} "
            f"≤ Prop. 9 bound {r.p9_bound:.4f}: {'yes' if r.p9_holds == 1 else 'NO'}; utility bound share "
            f"{r.t8_utility_share_within:.4f}. The bounds are loose by a factor ≈ "
            f"{r.t8_sp_bound / max(r.mean_sp_gap, 1e-12):.0f} against the mean.")
    ex = t[t["check"] == "theorem7-exact"]
    if not ex.empty:
        lines.append(f"- Theorem 7 (exact, {int(ex['n_cases'].iloc[0])} (α, β) pairs): max Δ_SP "
                     f"{ex['t7_max_sp_gap'].max():.2e}, max |U − |α−β|| {ex['t7_max_u_error'].max():.2e}.")
    return "\n".join(lines)
